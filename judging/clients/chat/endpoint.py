"""Where a rubric judge's chat endpoint is and what one call returns: the Endpoint, its API key (from the environment,
never stored), the SDK client each process keeps per endpoint, and the EndpointError a call fails with."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from judging.clients.chat.allowed import key_refusal
from judging.clients.deadline import deadline_hooks
from judging.labels import setting_label

if TYPE_CHECKING:
    import openai

# Local servers (vLLM, Ollama) need no key, but the SDK insists on one: this is what they receive.
NO_KEY_PLACEHOLDER = "no-key-needed"


class EndpointError(Exception):
    """A chat endpoint call that failed for good; `setting` names the judge setting to look at, when one is to blame.

    `attempts` is the number of HTTP requests sent before giving up (0 when the
    call was refused before sending anything, as for a missing API-key variable).
    `elapsed_seconds` is the time the call took before failing, every attempt and
    every wait between them included (None when nothing was sent): a run waited
    that long for this failure, as it waits for an answer (ChatAnswer.latency_seconds).
    `unreachable` is True when the endpoint itself failed, whatever was asked: no connection, a timeout, an HTTP
    5xx, or a 200 that is not a chat completion (a proxy's error page), each after its retries. A run stops when
    many calls in a row fail so (an outage: judging.services.runs.rubric_calls), instead of failing every sample left.
    """

    def __init__(
        self, message: str, *, setting: str | None = None, attempts: int = 0, elapsed_seconds: float | None = None,
        unreachable: bool = False,
    ) -> None:
        super().__init__(message)
        self.setting = setting
        self.attempts = attempts
        self.elapsed_seconds = elapsed_seconds
        self.unreachable = unreachable


@dataclass(frozen=True)
class Endpoint:
    """Where and how to call a rubric judge; the API key itself stays in the environment."""

    base_url: str
    model: str
    api_key_env: str = ""
    timeout_seconds: float = 60.0
    max_retries: int = 4


def endpoint_for(judge: Any) -> Endpoint:
    """The endpoint of a rubric judge (a judging.models.Judge)."""
    return Endpoint(
        base_url=judge.base_url,
        model=judge.model,
        api_key_env=judge.api_key_env,
        timeout_seconds=float(judge.timeout_seconds),
        max_retries=int(judge.max_retries),
    )


@dataclass(frozen=True)
class ChatAnswer:
    """One chat answer and what it took.

    `request_mode` is the response format that produced it (json_schema,
    json_object or prompt). `latency_seconds` is the whole time of the call,
    from its first request to the answer: failed tries, the waits between them
    (Retry-After, backoff) and response-format fallbacks included, because that
    is the time a run spends on it. `attempts` counts every HTTP request sent
    for this answer, so a slow call can be told apart from a retried one.
    """

    text: str
    request_mode: str
    input_tokens: int | None
    output_tokens: int | None
    latency_seconds: float
    attempts: int


_clients: dict[tuple[int, str, str, float], openai.OpenAI] = {}
_clients_lock = threading.Lock()


def api_key(endpoint: Endpoint) -> str:
    """The key to send: read from the variable the judge names, only if FAITHLAB_JUDGE_KEYS allows that variable for
    the endpoint's host (checked here, right before reading it, whatever was checked when the judge was saved or its
    run started: a stored judge's base URL or the setting may have changed since)."""
    if not endpoint.api_key_env:
        return NO_KEY_PLACEHOLDER
    refusal = key_refusal(endpoint.api_key_env, endpoint.base_url)
    if refusal:
        raise EndpointError(refusal, setting="api_key_env")
    key = os.environ.get(endpoint.api_key_env, "")
    if not key:
        raise EndpointError(
            f"The environment variable {endpoint.api_key_env} (the judge's {setting_label('api_key_env')}) is not "
            "set or is empty on this server: set it to the endpoint's API key, or clear the judge's "
            f"{setting_label('api_key_env')} for a server that needs no key.",
            setting="api_key_env",
        )
    return key


def client_for(endpoint: Endpoint, key: str) -> openai.OpenAI:
    import openai  # imported at first use: the SDK's ~500 modules cost every process (web, worker, commands) ~1 s

    # The process id is part of the key: a client's pooled connections must not cross a fork (Celery's prefork pool).
    cache_key = (os.getpid(), endpoint.base_url, key, float(endpoint.timeout_seconds))
    client = _clients.get(cache_key)
    if client is None:
        with _clients_lock:
            client = _clients.get(cache_key)
            if client is None:
                # max_retries=0: tenacity retries, so that waits honour Retry-After and attempts are counted here.
                seconds = float(endpoint.timeout_seconds)
                # Redirects are not followed: a judge may call only the address it was saved with (which was checked:
                # judging.clients.chat.allowed); a 3xx fails the call, naming it (failures.endpoint_error).
                http_client = openai.DefaultHttpxClient(timeout=seconds, event_hooks=deadline_hooks(seconds),
                                                        follow_redirects=False)
                client = openai.OpenAI(
                    base_url=endpoint.base_url, api_key=key, timeout=seconds, max_retries=0, http_client=http_client
                )
                _clients[cache_key] = client
    return client
