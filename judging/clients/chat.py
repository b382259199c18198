"""OpenAI-compatible chat endpoints: the only code that sends requests to an LLM (part of judging.clients)."""

from __future__ import annotations

# Every call to an OpenAI-compatible chat endpoint goes through `chat`: one SDK
# client per (process, base_url, key, timeout) reused across calls and threads, each attempt
# bounded as a whole by the judge's timeout_seconds (judging.clients.deadline), retries by
# tenacity (the SDK's own retries are off; when and how long to wait: judging.clients.retries),
# and a response-format fallback that is remembered per (base_url, model) so an endpoint is
# probed once per process, not on every call.
# Nothing here logs, and no message carries the API key: only the NAME of the
# variable that holds it (the judge's api_key_env) is ever shown.
import json
import os
import threading
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt

from judging.clients.deadline import deadline_hooks
from judging.clients.retries import NotACompletion, RetryWaits, capped_note, is_transient
from judging.labels import setting_label

if TYPE_CHECKING:
    import openai

# The modes a request can ask for, strongest first; an endpoint moves down this list only when it refuses one.
MODE_JSON_SCHEMA = "json_schema"
MODE_JSON_OBJECT = "json_object"
MODE_PROMPT = "prompt"
REQUEST_MODES = (MODE_JSON_SCHEMA, MODE_JSON_OBJECT, MODE_PROMPT)

# Local servers (vLLM, Ollama) need no key, but the SDK insists on one: this is what they receive.
NO_KEY_PLACEHOLDER = "no-key-needed"


class EndpointError(Exception):
    """A chat endpoint call that failed for good; `setting` names the judge setting to look at, when one is to blame.

    `attempts` is the number of HTTP requests sent before giving up (0 when the
    call was refused before sending anything, as for a missing API-key variable).
    `elapsed_seconds` is the time the call took before failing, every attempt and
    every wait between them included (None when nothing was sent): a run waited
    that long for this failure, as it waits for an answer (ChatAnswer.latency_seconds).
    """

    def __init__(
        self, message: str, *, setting: str | None = None, attempts: int = 0, elapsed_seconds: float | None = None
    ) -> None:
        super().__init__(message)
        self.setting = setting
        self.attempts = attempts
        self.elapsed_seconds = elapsed_seconds


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
# (base_url, model) -> the response formats the endpoint refused; the next call starts below them.
_refused_modes: dict[tuple[str, str], frozenset[str]] = {}
_modes_lock = threading.Lock()
# The base URLs that answered this process with a chat completion: a later answer from one of them that is not a
# completion is a passing fault (a proxy's error page), not a wrong address, and its error does not blame base_url.
_answered: set[str] = set()


def _api_key(endpoint: Endpoint) -> str:
    if not endpoint.api_key_env:
        return NO_KEY_PLACEHOLDER
    key = os.environ.get(endpoint.api_key_env, "")
    if not key:
        raise EndpointError(
            f"The environment variable {endpoint.api_key_env} (the judge's {setting_label('api_key_env')}) is not "
            "set or is empty on this server: set it to the endpoint's API key, or clear the judge's "
            f"{setting_label('api_key_env')} for a server that needs no key.",
            setting="api_key_env",
        )
    return key


def _client(endpoint: Endpoint, key: str) -> openai.OpenAI:
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
                http_client = openai.DefaultHttpxClient(timeout=seconds, event_hooks=deadline_hooks(seconds))
                client = openai.OpenAI(
                    base_url=endpoint.base_url, api_key=key, timeout=seconds, max_retries=0, http_client=http_client
                )
                _clients[cache_key] = client
    return client


def _spent(failure: EndpointError, started: float, capped: list[float]) -> EndpointError:
    """`failure` with the time the call took before it, and a word on any Retry-After wait cut short."""
    message = str(failure) + (capped_note(capped) if capped else "")
    return EndpointError(message, setting=failure.setting, attempts=failure.attempts,
                         elapsed_seconds=time.perf_counter() - started)


def _start_mode(endpoint: Endpoint, json_schema: dict | None) -> str:
    with _modes_lock:
        refused = _refused_modes.get((endpoint.base_url, endpoint.model), frozenset())
    first = 0 if json_schema is not None else 1
    for mode in REQUEST_MODES[first:]:
        if mode not in refused:
            return mode
    return MODE_PROMPT


def _remember_refusals(endpoint: Endpoint, refused: set[str]) -> None:
    with _modes_lock:
        known = _refused_modes.get((endpoint.base_url, endpoint.model), frozenset())
        _refused_modes[(endpoint.base_url, endpoint.model)] = known | refused


def forget_request_modes() -> None:
    """Forget what this process learned of endpoints: the response formats they refused (a server restarted with
    other options; tests) and which answered with a chat completion."""
    with _modes_lock:
        _refused_modes.clear()
        _answered.clear()


def _remember_answer(endpoint: Endpoint) -> None:
    with _modes_lock:
        _answered.add(endpoint.base_url)


def _has_answered(endpoint: Endpoint) -> bool:
    with _modes_lock:
        return endpoint.base_url in _answered


def _response_format(mode: str, json_schema: dict | None) -> dict[str, Any] | None:
    if mode == MODE_JSON_SCHEMA:
        return {"type": "json_schema", "json_schema": {"name": "answer", "schema": json_schema, "strict": True}}
    if mode == MODE_JSON_OBJECT:
        return {"type": "json_object"}
    return None


def _redact(text: str, key: str) -> str:
    # Some servers echo the key they refused ("Incorrect API key provided: sk-..."): it must not reach a message.
    if key and key != NO_KEY_PLACEHOLDER and len(key) >= 4:
        text = text.replace(key, "[redacted]")
    return storable(text)


def storable(text: str) -> str:
    """An endpoint's text with each NUL character (U+0000) shown as U+FFFD: PostgreSQL cannot store NUL (a run would
    fail on saving the answer), and an answer is kept as it came, never dropped, so the NUL is marked, not removed."""
    return text.replace("\x00", "\ufffd")


def _named(field: str) -> str:
    """A judge setting as a failure message names it: its label on the judges page, quoted so that a label holding
    parentheses ("Endpoint (base URL)") reads as one name, never the field's code name, which a person never sees."""
    return f"“{setting_label(field)}”"


def _server_message(error: openai.APIError) -> str:
    body = error.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return error.message


def _endpoint_error(error: openai.OpenAIError, endpoint: Endpoint, attempts: int, key: str) -> EndpointError:
    """The EndpointError an SDK error becomes, naming the judge setting to fix where one is to blame."""
    import openai

    where = endpoint.base_url
    tries = f"{attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(error, openai.APITimeoutError):
        message = (f"The endpoint at {where} did not answer within {endpoint.timeout_seconds:g} s in {tries}; "
                   f"check the judge's {_named('timeout_seconds')}.")
        return EndpointError(_redact(message, key), setting="timeout_seconds", attempts=attempts)
    if isinstance(error, openai.APIConnectionError):
        cause = f" ({error.__cause__})" if error.__cause__ else ""
        message = (f"Could not connect to the endpoint at {where} in {tries}{cause}; "
                   f"check the judge's {_named('base_url')}.")
        return EndpointError(_redact(message, key), setting="base_url", attempts=attempts)
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        said = _server_message(error)
        if status in (401, 403):
            if endpoint.api_key_env:
                message = (f"The endpoint at {where} refused the API key in {endpoint.api_key_env} (the judge's "
                           f"{_named('api_key_env')}) with HTTP {status}: {said}")
            else:
                message = (f"The endpoint at {where} wants an API key (HTTP {status}: {said}); set the judge's "
                           f"{_named('api_key_env')} to the name of an environment variable that holds it.")
            return EndpointError(_redact(message, key), setting="api_key_env", attempts=attempts)
        if status == 404:
            if error.code == "model_not_found" or endpoint.model in said or "model" in said.lower():
                message = (f"The endpoint at {where} does not serve the model {endpoint.model!r} (the judge's "
                           f"{_named('model')}): {said}")
                return EndpointError(_redact(message, key), setting="model", attempts=attempts)
            message = (f"The endpoint at {where} has no chat completions route: {said}; check the judge's "
                       f"{_named('base_url')} (OpenAI-compatible servers usually end in /v1).")
            return EndpointError(_redact(message, key), setting="base_url", attempts=attempts)
        if status == 429:
            message = f"The endpoint at {where} was still rate limiting (HTTP 429) after {tries}: {said}"
        elif status >= 500:
            message = f"The endpoint at {where} answered HTTP {status} after {tries}: {said}"
        else:
            message = f"The endpoint at {where} refused the request with HTTP {status}: {said}"
        return EndpointError(_redact(message, key), attempts=attempts)
    return EndpointError(_redact(f"The call to the endpoint at {where} failed: {error}", key), attempts=attempts)


# What the SDK raises when an HTTP 200 body is not the JSON it expects (text that is not JSON): such an answer, like
# one the SDK hands back as a str (an HTML page), is a NotACompletion, retried as a 5xx is.
_MALFORMED_ANSWER = (ValueError, TypeError, AttributeError)
BODY_SHOWN = 60  # characters of such a body an error quotes


def _completion(result: Any) -> Any:
    """``result`` of the SDK when it is a chat completion; raises NotACompletion, with the body as text, otherwise.

    The SDK gives a body that is not JSON as a str, and builds a ChatCompletion from any JSON object without checking
    it: one with no ``choices`` list (``{"error": ...}`` sent with status 200) is not a completion either.
    """
    from openai.types.chat import ChatCompletion

    if isinstance(result, ChatCompletion) and isinstance(result.choices, list):
        return result
    if isinstance(result, str):
        raise NotACompletion(result)
    if isinstance(result, ChatCompletion):
        with warnings.catch_warnings():  # pydantic warns of the fields that do not fit; they are what to show
            warnings.simplefilter("ignore")
            raise NotACompletion(result.to_json(indent=None))
    raise NotACompletion(json.dumps(result, default=str) if isinstance(result, (dict, list)) else "")


def _malformed(error: Exception) -> NotACompletion:
    """The NotACompletion for an error the SDK raised reading a 200's body (JSONDecodeError keeps the text)."""
    return NotACompletion(error.doc if isinstance(error, json.JSONDecodeError) else "")


def _began(body: str) -> str:
    """How an error quotes a body that is not a chat completion: its first characters, spaces squeezed."""
    shown = " ".join(body.split())
    if not shown:
        return "it was empty" if body == "" else "it held only white space"
    return f"it began '{shown[:BODY_SHOWN]}{'...' if len(shown) > BODY_SHOWN else ''}'"


def _not_a_completion(
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
    if answered_before or _has_answered(endpoint):
        message = (f"{said}. It has answered with chat completions before, so its address is right: this is "
                   "likely an error page from a proxy or gateway in front of the server.")
        return EndpointError(_redact(message, key), attempts=attempts)
    message = f"{said}; check the judge's {_named('base_url')} (OpenAI-compatible servers usually end in /v1)."
    return EndpointError(_redact(message, key), setting="base_url", attempts=attempts)


def _refuses_response_format(error: openai.APIStatusError) -> bool:
    # Decision: ANY 400/422 to a request that carried a response_format moves down a mode. Servers word this
    # refusal in many ways ("Extra inputs are not permitted", "unknown field", a bare 400), so matching the
    # wording would miss some. A 400 with another cause fails again in the last mode and is reported then;
    # refusals are remembered only once a lower mode answered, so such a 400 never downgrades an endpoint.
    return error.status_code in (400, 422)


def chat(
    endpoint: Endpoint,
    messages: list[dict],
    *,
    json_schema: dict | None = None,
    temperature: float = 0.0,
    answered_before: bool = False,
) -> ChatAnswer:
    """One chat completion from `endpoint`, asking for structured output as far as the endpoint allows.

    With a `json_schema`: json_schema structured output, then JSON mode, then the
    prompt alone (without one: JSON mode, then the prompt alone), remembering per
    (base_url, model) which formats the endpoint refused. 429s, 5xxs, timeouts,
    connection errors and 200s whose body is not a chat completion (a proxy's
    HTML error page) are retried up to `endpoint.max_retries` times, waiting
    what Retry-After asks (capped, and said so if the call fails) or an
    exponential backoff. `answered_before`: the caller has had chat completions
    from this endpoint (a run's earlier answers), so a body that is not one
    does not blame the base URL. Each attempt is bounded as a whole by
    `endpoint.timeout_seconds`, however the server trickles its answer. Raises
    EndpointError (with the time the call took) when the call fails for good; a
    missing API-key variable is refused before any request.
    """
    import openai
    from openai.types.chat import ChatCompletion

    key = _api_key(endpoint)
    client = _client(endpoint, key)
    mode = _start_mode(endpoint, json_schema)
    attempts = 0
    not_completions = 0  # answers that were HTTP 200 and not a chat completion
    refused: set[str] = set()
    waits = RetryWaits()

    def send(response_format: dict[str, Any] | None) -> Any:
        nonlocal attempts, not_completions
        attempts += 1
        arguments: dict[str, Any] = {"model": endpoint.model, "messages": messages, "temperature": temperature}
        if response_format is not None:
            arguments["response_format"] = response_format
        # The SDK's own request path (auth, base_url, timeouts, its error classes, the ChatCompletion it parses),
        # without chat.completions.create's walk of the typed parameters: our body is plain JSON already, and that
        # walk was ~1.7 ms of CPU a call, a third of the app's own cost per call in a judge run (docs/performance.md).
        try:
            return _completion(client.post("/chat/completions", body=arguments, cast_to=ChatCompletion))
        except openai.OpenAIError:
            raise  # the SDK's own errors (status, connection) go on as they are, never as a malformed answer
        except NotACompletion:
            not_completions += 1
            raise
        except _MALFORMED_ANSWER as error:
            not_completions += 1
            raise _malformed(error) from None

    retrying = Retrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(max(0, endpoint.max_retries) + 1),
        wait=waits.wait,
        before_sleep=waits.before_sleep,
        reraise=True,
    )
    # The whole call, retries and their waits included (see ChatAnswer); the key and client set-up are not in it.
    started = time.perf_counter()
    while True:
        response_format = _response_format(mode, json_schema)
        try:
            completion = retrying(send, response_format)
        except openai.APIStatusError as error:
            if response_format is not None and _refuses_response_format(error):
                refused.add(mode)
                mode = REQUEST_MODES[REQUEST_MODES.index(mode) + 1]
                continue
            raise _spent(_endpoint_error(error, endpoint, attempts, key), started, waits.capped) from None
        except openai.OpenAIError as error:
            raise _spent(_endpoint_error(error, endpoint, attempts, key), started, waits.capped) from None
        except NotACompletion as failure:
            error = _not_a_completion(endpoint, failure, times=not_completions, sent=attempts, attempts=attempts,
                                      key=key, answered_before=answered_before)
            raise _spent(error, started, waits.capped) from None
        break
    latency = time.perf_counter() - started
    _remember_answer(endpoint)
    if refused:
        # Only now, with an answer in a lower mode: a 400 for another reason must not downgrade the endpoint.
        _remember_refusals(endpoint, refused)
    choices = completion.choices or []
    message = choices[0].message if choices else None
    # A structured-output refusal comes with no content: its text is the raw answer, kept (and never a score).
    text = ((message.content or getattr(message, "refusal", None) or "") if message is not None else "")
    usage = completion.usage
    return ChatAnswer(
        text=storable(text),
        request_mode=mode,
        input_tokens=usage.prompt_tokens if usage is not None else None,
        output_tokens=usage.completion_tokens if usage is not None else None,
        latency_seconds=latency,
        attempts=attempts,
    )


def check_endpoint(endpoint: Endpoint, *, answered_before: bool = False) -> None:
    """Raise EndpointError unless the endpoint answers and serves the model (naming base_url, model or api_key_env).

    Reads the /models list first; when the model is not listed (or the server
    has no list) one one-token chat call decides, so proxies that route models
    they do not list are not refused. That call's answer, when a 200 that is not
    a chat completion, is retried as in `chat`, and blames base_url as there
    (not when `answered_before`, or when the endpoint answered this process).
    """
    import openai

    key = _api_key(endpoint)
    client = _client(endpoint, key)
    attempts = 0
    probes = 0  # one-token chat requests
    not_completions = 0

    def list_models() -> list[str]:
        nonlocal attempts
        attempts += 1
        return [model.id for model in client.models.list().data]

    def one_token() -> Any:
        nonlocal attempts, probes, not_completions
        attempts += 1
        probes += 1
        try:
            return _completion(client.chat.completions.create(
                model=endpoint.model, messages=[{"role": "user", "content": "Reply with OK."}], max_tokens=1
            ))
        except openai.OpenAIError:
            raise  # as in `chat`
        except NotACompletion:
            not_completions += 1
            raise
        except _MALFORMED_ANSWER as error:
            not_completions += 1
            raise _malformed(error) from None

    retrying = Retrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(max(0, endpoint.max_retries) + 1),
        wait=RetryWaits().wait,
        reraise=True,
    )
    served: list[str] = []
    try:
        served = retrying(list_models)
    except openai.APIConnectionError as error:
        raise _endpoint_error(error, endpoint, attempts, key) from None
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        raise _endpoint_error(error, endpoint, attempts, key) from None
    except (openai.OpenAIError, *_MALFORMED_ANSWER):
        served = []  # no usable /models route: the chat call below decides
    if endpoint.model in served:
        return
    try:
        retrying(one_token)
    except openai.NotFoundError as error:
        if served:
            shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
            message = (f"The endpoint at {endpoint.base_url} does not serve the model {endpoint.model!r} (the "
                       f"judge's {_named('model')}); it serves: {shown}.")
            raise EndpointError(_redact(message, key), setting="model", attempts=attempts) from None
        raise _endpoint_error(error, endpoint, attempts, key) from None
    except openai.BadRequestError:
        return  # the model exists; it only disliked the probe (max_tokens=1 on some servers)
    except openai.OpenAIError as error:
        raise _endpoint_error(error, endpoint, attempts, key) from None
    except NotACompletion as failure:
        raise _not_a_completion(endpoint, failure, times=not_completions, sent=probes, attempts=attempts, key=key,
                                answered_before=answered_before) from None
    _remember_answer(endpoint)
