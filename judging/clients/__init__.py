"""The one place that talks to the outside: OpenAI-compatible chat endpoints (`chat`) and local NLI models (`nli`).

`chat` leans on two modules of its own: `deadline` (each request bounded as a
whole, however slowly the server answers) and `retries` (which failures are
tried again, and how long to wait first: Retry-After, capped, or a backoff).

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
    ChatAnswer,
    Endpoint,
    EndpointError,
    chat,
    check_endpoint,
    endpoint_for,
    forget_request_modes,
)
from judging.clients.nli import CONSISTENT_LABELS, ModelSettingError, NliModel, load_nli_model
from judging.clients.retries import RETRY_AFTER_CAP_SECONDS, retry_after_seconds

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
