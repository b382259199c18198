"""The two calls: `chat` (one chat completion, asking for structured output as far as the endpoint allows, retried
by tenacity) and `check_endpoint` (does the endpoint answer and serve the model, before a run pays for anything)."""

from __future__ import annotations

import time
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt

from judging.clients.chat.answers import MALFORMED_ANSWER, Tally, storable
from judging.clients.chat.endpoint import ChatAnswer, Endpoint, EndpointError, api_key, client_for
from judging.clients.chat.failures import endpoint_error, named, not_a_completion, redact, spent
from judging.clients.chat.memory import (
    REQUEST_MODES,
    refuses_response_format,
    remember_answer,
    remember_refusals,
    response_format_for,
    start_mode,
)
from judging.clients.retries import NotACompletion, RetryWaits, is_transient


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

    key = api_key(endpoint)
    client = client_for(endpoint, key)
    mode = start_mode(endpoint, json_schema)
    tally = Tally()
    refused: set[str] = set()
    waits = RetryWaits()

    def send(response_format: dict[str, Any] | None) -> Any:
        tally.attempts += 1
        arguments: dict[str, Any] = {"model": endpoint.model, "messages": messages, "temperature": temperature}
        if response_format is not None:
            arguments["response_format"] = response_format
        # The SDK's own request path (auth, base_url, timeouts, its error classes, the ChatCompletion it parses),
        # without chat.completions.create's walk of the typed parameters: our body is plain JSON already, and that
        # walk was ~1.7 ms of CPU a call, a third of the app's own cost per call in a judge run (docs/performance.md).
        return tally.completion(lambda: client.post("/chat/completions", body=arguments, cast_to=ChatCompletion))

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
        response_format = response_format_for(mode, json_schema)
        try:
            completion = retrying(send, response_format)
        except openai.APIStatusError as error:
            if response_format is not None and refuses_response_format(error):
                refused.add(mode)
                mode = REQUEST_MODES[REQUEST_MODES.index(mode) + 1]
                continue
            raise spent(endpoint_error(error, endpoint, tally.attempts, key), started, waits.capped) from None
        except openai.OpenAIError as error:
            raise spent(endpoint_error(error, endpoint, tally.attempts, key), started, waits.capped) from None
        except NotACompletion as failure:
            error = not_a_completion(endpoint, failure, times=tally.not_completions, sent=tally.attempts,
                                     attempts=tally.attempts, key=key, answered_before=answered_before)
            raise spent(error, started, waits.capped) from None
        break
    latency = time.perf_counter() - started
    remember_answer(endpoint)
    if refused:
        # Only now, with an answer in a lower mode: a 400 for another reason must not downgrade the endpoint.
        remember_refusals(endpoint, refused)
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
        attempts=tally.attempts,
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

    key = api_key(endpoint)
    client = client_for(endpoint, key)
    tally = Tally()
    probes = 0  # one-token chat requests

    def list_models() -> list[str]:
        tally.attempts += 1
        return [model.id for model in client.models.list().data]

    def one_token() -> Any:
        nonlocal probes
        tally.attempts += 1
        probes += 1
        return tally.completion(lambda: client.chat.completions.create(
            model=endpoint.model, messages=[{"role": "user", "content": "Reply with OK."}], max_tokens=1
        ))

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
        raise endpoint_error(error, endpoint, tally.attempts, key) from None
    except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
        raise endpoint_error(error, endpoint, tally.attempts, key) from None
    except (openai.OpenAIError, *MALFORMED_ANSWER):
        served = []  # no usable /models route: the chat call below decides
    if endpoint.model in served:
        return
    try:
        retrying(one_token)
    except openai.NotFoundError as error:
        if served:
            shown = ", ".join(served[:10]) + (", ..." if len(served) > 10 else "")
            message = (f"The endpoint at {endpoint.base_url} does not serve the model {endpoint.model!r} (the "
                       f"judge's {named('model')}); it serves: {shown}.")
            raise EndpointError(redact(message, key), setting="model", attempts=tally.attempts) from None
        raise endpoint_error(error, endpoint, tally.attempts, key) from None
    except openai.BadRequestError:
        return  # the model exists; it only disliked the probe (max_tokens=1 on some servers)
    except openai.OpenAIError as error:
        raise endpoint_error(error, endpoint, tally.attempts, key) from None
    except NotACompletion as failure:
        raise not_a_completion(endpoint, failure, times=tally.not_completions, sent=probes, attempts=tally.attempts,
                               key=key, answered_before=answered_before) from None
    remember_answer(endpoint)
