"""The one place that talks to the outside: OpenAI-compatible chat endpoints (`chat`) and local NLI models (`nli`).

Everything else in the judging app calls these functions, so nothing else makes
network calls or loads weights, and tests replace the outside in one place (a
real HTTP server on loopback, a tiny model saved to a temporary directory).
"""

from __future__ import annotations

from judging.clients.chat import (
    MODE_JSON_OBJECT,
    MODE_JSON_SCHEMA,
    MODE_PROMPT,
    NO_KEY_PLACEHOLDER,
    REQUEST_MODES,
    RETRY_AFTER_CAP_SECONDS,
    ChatAnswer,
    Endpoint,
    EndpointError,
    chat,
    check_endpoint,
    endpoint_for,
    forget_request_modes,
    retry_after_seconds,
)
from judging.clients.nli import CONSISTENT_LABELS, ModelSettingError, NliModel, load_nli_model

__all__ = [
    "CONSISTENT_LABELS",
    "MODE_JSON_OBJECT",
    "MODE_JSON_SCHEMA",
    "MODE_PROMPT",
    "NO_KEY_PLACEHOLDER",
    "REQUEST_MODES",
    "RETRY_AFTER_CAP_SECONDS",
    "ChatAnswer",
    "Endpoint",
    "EndpointError",
    "ModelSettingError",
    "NliModel",
    "chat",
    "check_endpoint",
    "endpoint_for",
    "forget_request_modes",
    "load_nli_model",
    "retry_after_seconds",
]
