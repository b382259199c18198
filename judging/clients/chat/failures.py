"""The words of a failed call: an SDK error or a body that is not a chat completion becomes an EndpointError naming
the judge setting to fix where one is to blame, as the judges page labels it, and never carrying the API key."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from judging.clients.chat.answers import storable
from judging.clients.chat.endpoint import NO_KEY_PLACEHOLDER, Endpoint, EndpointError
from judging.clients.chat.memory import has_answered
from judging.clients.retries import NotACompletion, capped_note
from judging.labels import setting_label

if TYPE_CHECKING:
    import openai

BODY_SHOWN = 60  # characters of a body that is not a chat completion an error quotes


def redact(text: str, key: str) -> str:
    # Some servers echo the key they refused ("Incorrect API key provided: sk-..."): it must not reach a message.
    if key and key != NO_KEY_PLACEHOLDER and len(key) >= 4:
        text = text.replace(key, "[redacted]")
    return storable(text)


def named(field: str) -> str:
    """A judge setting as a failure message names it: its label on the judges page, quoted so that a label holding
    parentheses ("Endpoint (base URL)") reads as one name, never the field's code name, which a person never sees."""
    return f"“{setting_label(field)}”"


def _server_message(error: openai.APIError) -> str:
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return error.message


def endpoint_error(error: openai.OpenAIError, endpoint: Endpoint, attempts: int, key: str) -> EndpointError:
    """The EndpointError an SDK error becomes, naming the judge setting to fix where one is to blame."""
    import openai

    where = endpoint.base_url
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(error, openai.APITimeoutError):
        message = (f"The endpoint at {where} did not answer within {endpoint.timeout_seconds:g} s in {tries}; "
                   f"check the judge's {named('timeout_seconds')}.")
        return EndpointError(redact(message, key), setting="timeout_seconds", attempts=attempts, unreachable=True)
    if isinstance(error, openai.APIConnectionError):
        cause = f" ({error.__cause__})" if error.__cause__ else ""
        message = (f"Could not connect to the endpoint at {where} in {tries}{cause}; "
                   f"check the judge's {named('base_url')}.")
        return EndpointError(redact(message, key), setting="base_url", attempts=attempts, unreachable=True)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        said = _server_message(error)
        if status in (401, 403):
            if endpoint.api_key_env:
                message = (f"The endpoint at {where} refused the API key in {endpoint.api_key_env} (the judge's "
                           f"{named('api_key_env')}) with HTTP {status}: {said}")
            else:
                message = (f"The endpoint at {where} wants an API key (HTTP {status}: {said}); set the judge's "
                           f"{named('api_key_env')} to the name of an environment variable that holds it.")
            return EndpointError(redact(message, key), setting="api_key_env", attempts=attempts)
        if status == 404:
            if error.code == "model_not_found" or endpoint.model in said or "model" in said.lower():
                message = (f"The endpoint at {where} does not serve the model {endpoint.model!r} (the judge's "
                           f"{named('model')}): {said}")
                return EndpointError(redact(message, key), setting="model", attempts=attempts)
            message = (f"The endpoint at {where} has no chat completions route: {said}; check the judge's "
                       f"{named('base_url')} (OpenAI-compatible servers usually end in /v1).")
            return EndpointError(redact(message, key), setting="base_url", attempts=attempts)
        if 300 <= status < 400:
            # Never followed (endpoint.client_for): the address a judge calls is the one it was saved with.
            message = (f"The endpoint at {where} answered HTTP {status}, a redirect, which is not followed; set the "
                       f"judge's {named('base_url')} to the address the server means (https:// rather than http://, "
                       "or another path).")
            return EndpointError(redact(message, key), setting="base_url", attempts=attempts)
        if status == 429:
            message = f"The endpoint at {where} was still rate limiting (HTTP 429) after {tries}: {said}"
        elif status >= 500:
            message = f"The endpoint at {where} answered HTTP {status} after {tries}: {said}"
        else:
            message = f"The endpoint at {where} refused the request with HTTP {status}: {said}"
        return EndpointError(redact(message, key), attempts=attempts, unreachable=status >= 500)
    return EndpointError(redact(f"The call to the endpoint at {where} failed: {error}", key), attempts=attempts)


def spent(failure: EndpointError, started: float, capped: list[float]) -> EndpointError:
    """`failure` with the time the call took before it, and a word on any Retry-After wait cut short."""
    message = str(failure) + (capped_note(capped) if capped else "")
    return EndpointError(message, setting=failure.setting, attempts=failure.attempts,
                         elapsed_seconds=time.perf_counter() - started, unreachable=failure.unreachable)


def not_a_completion(
    endpoint: Endpoint, failure: NotACompletion, *, times: int, sent: int, attempts: int, key: str,
    answered_before: bool,
) -> EndpointError:
    """The error for a call answered HTTP 200 with a body that is not a chat completion (``times`` of the ``sent``
    chat requests; ``attempts``: every request, a model list included; ``failure``: the last such answer).

    base_url is blamed (and is the setting, which stops a run before it starts) only when that address has given no
    chat completion yet, to this run (``answered_before``) or to this process: then the address is likely wrong.
    After good answers it is an error page from whatever stands in front of the server, and the message says so.
    """
    said = (f"The endpoint at {endpoint.base_url} answered HTTP 200 with a body that is not a chat completion "
            f"({_began(failure.body)}), {times} time{'s' if times != 1 else ''}"
            f"{f' in {sent} attempts' if sent != times else ''}")
    if answered_before or has_answered(endpoint):
        message = (f"{said}. It has answered with chat completions before, so its address is right: this is "
                   "likely an error page from a proxy or gateway in front of the server.")
        return EndpointError(redact(message, key), attempts=attempts, unreachable=True)
    message = f"{said}; check the judge's {named('base_url')} (OpenAI-compatible servers usually end in /v1)."
    return EndpointError(redact(message, key), setting="base_url", attempts=attempts)


def _began(body: str) -> str:
    """How an error quotes a body that is not a chat completion: its first characters, spaces squeezed."""
    shown = " ".join(body.split())
    if not shown:
        return "it was empty" if body == "" else "it held only white space"
    return f"it began '{shown[:BODY_SHOWN]}{'...' if len(shown) > BODY_SHOWN else ''}'"
