"""What a process learns of each chat endpoint, kept for its later calls: the response formats an endpoint refused
(its next call starts below them, so an endpoint is probed once per process, not on every call) and whether its
address has answered with a chat completion (then a body that is not one is a passing fault, not a wrong address)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import openai

    from judging.clients.chat.endpoint import Endpoint

# The modes a request can ask for, strongest first; an endpoint moves down this list only when it refuses one.
MODE_JSON_SCHEMA = "json_schema"
MODE_JSON_OBJECT = "json_object"
MODE_PROMPT = "prompt"
REQUEST_MODES = (MODE_JSON_SCHEMA, MODE_JSON_OBJECT, MODE_PROMPT)

# (base_url, model) -> the response formats the endpoint refused; the next call starts below them.
_refused_modes: dict[tuple[str, str], frozenset[str]] = {}
_modes_lock = threading.Lock()
# The base URLs that answered this process with a chat completion: a later answer from one of them that is not a
# completion is a passing fault (a proxy's error page), not a wrong address, and its error does not blame base_url.
_answered: set[str] = set()


def start_mode(endpoint: Endpoint, json_schema: dict | None) -> str:
    with _modes_lock:
        refused = _refused_modes.get((endpoint.base_url, endpoint.model), frozenset())
    first = 0 if json_schema is not None else 1
    for mode in REQUEST_MODES[first:]:
        if mode not in refused:
            return mode
    return MODE_PROMPT


def remember_refusals(endpoint: Endpoint, refused: set[str]) -> None:
    with _modes_lock:
        known = _refused_modes.get((endpoint.base_url, endpoint.model), frozenset())
        _refused_modes[(endpoint.base_url, endpoint.model)] = known | refused


def forget_request_modes() -> None:
    """Forget what this process learned of endpoints: the response formats they refused (a server restarted with
    other options; tests) and which answered with a chat completion."""
    with _modes_lock:
        _refused_modes.clear()
        _answered.clear()


def remember_answer(endpoint: Endpoint) -> None:
    with _modes_lock:
        _answered.add(endpoint.base_url)


def has_answered(endpoint: Endpoint) -> bool:
    with _modes_lock:
        return endpoint.base_url in _answered


def response_format_for(mode: str, json_schema: dict | None) -> dict[str, Any] | None:
    if mode == MODE_JSON_SCHEMA:
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": json_schema, "strict": True}}
    if mode == MODE_JSON_OBJECT:
        return {"type": "json_object"}
    return None


def refuses_response_format(error: openai.APIStatusError) -> bool:
    # Decision: ANY 400/422 to a request that carried a response_format moves down a mode. Servers word this
    # refusal in many ways ("Extra inputs are not permitted", "unknown field", a bare 400), so matching the
    # wording would miss some. A 400 with another cause fails again in the last mode and is reported then;
    # refusals are remembered only once a lower mode answered, so such a 400 never downgrades an endpoint.
    return error.status_code in (400, 422)
