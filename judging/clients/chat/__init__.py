"""OpenAI-compatible chat endpoints: the only code that sends requests to an LLM (part of judging.clients).

Every call goes through `chat` (calls.py): one SDK client per (process, base_url,
key, timeout), reused across calls and threads (endpoint.py); each attempt
bounded as a whole by the judge's timeout_seconds (judging.clients.deadline);
retries by tenacity, the SDK's own being off (when and how long to wait:
judging.clients.retries); and a response-format fallback remembered per
(base_url, model), so an endpoint is probed once per process (memory.py).
What came back is read in answers.py; a failure is worded in failures.py. Which API-key variables are read and sent,
to which hosts (FAITHLAB_JUDGE_KEYS), and which hosts a project admin may name (FAITHLAB_JUDGE_HOSTS): allowed.py;
redirects are never followed.
Nothing here logs, and no message carries the API key: only the NAME of the
variable that holds it (the judge's api_key_env) is ever shown.
"""

from __future__ import annotations

from judging.clients.chat.calls import chat, check_endpoint
from judging.clients.chat.endpoint import NO_KEY_PLACEHOLDER, ChatAnswer, Endpoint, EndpointError, endpoint_for
from judging.clients.chat.memory import (
    MODE_JSON_OBJECT,
    MODE_JSON_SCHEMA,
    MODE_PROMPT,
    REQUEST_MODES,
    forget_request_modes,
)

__all__ = [
    "MODE_JSON_OBJECT",
    "MODE_JSON_SCHEMA",
    "MODE_PROMPT",
    "NO_KEY_PLACEHOLDER",
    "REQUEST_MODES",
    "ChatAnswer",
    "Endpoint",
    "EndpointError",
    "chat",
    "check_endpoint",
    "endpoint_for",
    "forget_request_modes",
]
