"""The chat client against a real OpenAI-compatible server on loopback: formats, retries, errors, the API key."""

from __future__ import annotations

import email.utils
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from judging.clients import (
    ChatAnswer,
    Endpoint,
    EndpointError,
    chat,
    check_endpoint,
    endpoint_for,
    forget_request_modes,
    retry_after_seconds,
)
from judging.models import Judge
from judging.prompts import answer_schema
from tests.judging.llm_server import LoopbackLLM, Reply
from tests.loopback import free_port

MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Rate this."}]
SCHEMA = answer_schema(True)
KEY_VARIABLE = "FAITHLAB_TEST_JUDGE_KEY"
SECRET = "sk-test-4f1c9a77e2b04d"


@pytest.fixture(autouse=True)
def fresh_request_modes() -> Iterator[None]:
    # A later server may get an earlier one's port: what that one refused must not carry over.
    forget_request_modes()
    yield
    forget_request_modes()


def endpoint(server: LoopbackLLM, **settings: Any) -> Endpoint:
    settings.setdefault("timeout_seconds", 5.0)
    settings.setdefault("max_retries", 2)
    return Endpoint(base_url=server.base_url, model=settings.pop("model", "test-model"), **settings)


def response_format_type(body: dict[str, Any]) -> str | None:
    return (body.get("response_format") or {}).get("type")


def header(server: LoopbackLLM, index: int, name: str) -> str | None:
    return {key.lower(): value for key, value in server.headers_seen[index].items()}.get(name.lower())


def test_structured_output_is_asked_first_and_accepted() -> None:
    with LoopbackLLM() as server:
        answer = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
    assert answer == ChatAnswer(
        text='{"reasoning": "Every statement is supported by the source.", "score": 5}',
        request_mode="json_schema",
        input_tokens=120,
        output_tokens=30,
        latency_seconds=answer.latency_seconds,
        attempts=1,
    )
    assert answer.latency_seconds > 0
    sent = server.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"] == SCHEMA
    assert sent["temperature"] == 0.0
    assert sent["messages"] == MESSAGES


def test_server_refusing_json_schema_gets_json_mode_and_it_is_remembered() -> None:
    with LoopbackLLM(reject_response_formats=("json_schema",)) as server:
        first = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
        second = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
    assert (first.request_mode, first.attempts) == ("json_object", 2)
    assert (second.request_mode, second.attempts) == ("json_object", 1)
    assert [response_format_type(body) for body in server.requests] == ["json_schema", "json_object", "json_object"]


def test_server_refusing_both_formats_gets_the_prompt_alone() -> None:
    with LoopbackLLM(reject_response_formats=("json_schema", "json_object")) as server:
        first = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
        second = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
    assert (first.request_mode, first.attempts) == ("prompt", 3)
    assert (second.request_mode, second.attempts) == ("prompt", 1)
    assert [response_format_type(body) for body in server.requests] == ["json_schema", "json_object", None, None]
    assert "response_format" not in server.requests[-1]


def test_without_a_schema_json_mode_is_asked_first() -> None:
    with LoopbackLLM() as server:
        answer = chat(endpoint(server), MESSAGES)
    assert answer.request_mode == "json_object"
    assert response_format_type(server.requests[0]) == "json_object"


def test_a_400_for_another_reason_is_reported_and_does_not_downgrade_the_endpoint() -> None:
    def script(body: dict[str, Any], attempt: int) -> Reply:
        if "too long" in str(body["messages"]):
            return Reply(status=400, error_body={"error": {"message": "context length exceeded", "type": "x"}})
        return Reply()

    long_messages = [{"role": "user", "content": "too long"}]
    with LoopbackLLM(script=script) as server:
        with pytest.raises(EndpointError) as failure:
            chat(endpoint(server), long_messages, json_schema=SCHEMA)
        after = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
    assert failure.value.attempts == 3  # json_schema, json_object, then the prompt alone
    assert "HTTP 400: context length exceeded" in str(failure.value)
    assert after.request_mode == "json_schema"


def test_429_with_retry_after_is_waited_out_then_answered() -> None:
    def script(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(status=429, headers={"Retry-After": "1"}) if attempt == 0 else Reply()

    with LoopbackLLM(script=script) as server:
        answer = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
        arrivals = list(server.arrivals)
    assert answer.attempts == 2
    assert answer.request_mode == "json_schema"
    assert arrivals[1] - arrivals[0] >= 0.9  # the client waited what Retry-After asked


def test_500_twice_then_an_answer() -> None:
    def script(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(status=500) if attempt < 2 else Reply(content='{"score": 4}')

    with LoopbackLLM(script=script) as server:
        answer = chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
    assert (answer.text, answer.attempts) == ('{"score": 4}', 3)
    assert server.chat_calls == 3


def test_a_nul_character_in_an_answer_or_an_error_is_marked_not_kept() -> None:
    """PostgreSQL cannot store NUL: an answer holding one is kept with U+FFFD in its place, and still parsed."""
    def refusing(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(status=400, error_body={"error": {"message": "bad\u0000request", "type": "x"}})

    def answering(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(content='{"reasoning": "A\u0000B", "score": 4}')

    with LoopbackLLM(script=refusing) as server, pytest.raises(EndpointError) as refused:
        chat(endpoint(server), MESSAGES, json_schema=None)
    with LoopbackLLM(script=answering) as server:
        answer = chat(endpoint(server), MESSAGES, json_schema=None)
    assert "\x00" not in str(refused.value) and "bad\ufffdrequest" in str(refused.value)
    assert answer.text == '{"reasoning": "A\ufffdB", "score": 4}'


def test_timeout_is_retried_then_answered() -> None:
    def script(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(sleep=1.5) if attempt == 0 else Reply(content='{"score": 3}')

    with LoopbackLLM(script=script) as server:
        answer = chat(endpoint(server, timeout_seconds=0.4), MESSAGES, json_schema=SCHEMA)
    assert (answer.text, answer.attempts) == ('{"score": 3}', 2)


def test_persistent_timeout_names_the_timeout_setting() -> None:
    with LoopbackLLM(script=lambda body, attempt: Reply(sleep=1.0)) as server:
        with pytest.raises(EndpointError) as failure:
            chat(endpoint(server, timeout_seconds=0.3, max_retries=1), MESSAGES, json_schema=SCHEMA)
    assert failure.value.setting == "timeout_seconds"
    assert failure.value.attempts == 2
    assert "did not answer within 0.3 s" in str(failure.value)


def test_persistent_500_fails_after_max_retries_plus_one_attempts() -> None:
    with LoopbackLLM(script=lambda body, attempt: Reply(status=503)) as server:
        with pytest.raises(EndpointError) as failure:
            chat(endpoint(server, max_retries=1), MESSAGES, json_schema=SCHEMA)
    assert failure.value.attempts == 2
    assert server.chat_calls == 2
    assert "HTTP 503 after 2 attempts" in str(failure.value)


def test_missing_api_key_variable_is_refused_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    with LoopbackLLM() as server:
        with pytest.raises(EndpointError) as failure:
            chat(endpoint(server, api_key_env=KEY_VARIABLE), MESSAGES, json_schema=SCHEMA)
        with pytest.raises(EndpointError) as check_failure:
            check_endpoint(endpoint(server, api_key_env=KEY_VARIABLE))
    assert failure.value.setting == check_failure.value.setting == "api_key_env"
    assert failure.value.attempts == 0
    assert KEY_VARIABLE in str(failure.value) and "API key variable" in str(failure.value)
    assert server.chat_calls == 0


def test_api_key_is_sent_as_bearer_and_never_in_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, SECRET)

    def script(body: dict[str, Any], attempt: int) -> Reply:
        if "refuse" in str(body["messages"]):
            # Some servers echo the key they refused.
            return Reply(status=401, error_body={"error": {"message": f"Incorrect API key provided: {SECRET}"}})
        if "break" in str(body["messages"]):
            return Reply(status=500, error_body={"error": {"message": f"crashed while using {SECRET}"}})
        return Reply()

    with LoopbackLLM(script=script) as server:
        settings = endpoint(server, api_key_env=KEY_VARIABLE, max_retries=0)
        chat(settings, MESSAGES, json_schema=SCHEMA)
        with pytest.raises(EndpointError) as refused:
            chat(settings, [{"role": "user", "content": "refuse"}], json_schema=SCHEMA)
        with pytest.raises(EndpointError) as broken:
            chat(settings, [{"role": "user", "content": "break"}], json_schema=SCHEMA)
    assert header(server, 0, "Authorization") == f"Bearer {SECRET}"
    assert refused.value.setting == "api_key_env"
    assert KEY_VARIABLE in str(refused.value)
    for failure in (refused.value, broken.value):
        assert SECRET not in str(failure)
        assert SECRET not in repr(failure.args)
        assert "[redacted]" in str(failure)


def test_without_api_key_variable_a_placeholder_is_sent() -> None:
    with LoopbackLLM() as server:
        chat(endpoint(server), MESSAGES)
    assert header(server, 0, "Authorization") == "Bearer no-key-needed"


def test_wrong_model_names_the_model_setting_and_is_not_retried() -> None:
    with LoopbackLLM(models=("llama-3-8b",)) as server:
        with pytest.raises(EndpointError) as failure:
            chat(endpoint(server, model="gpt-4o"), MESSAGES, json_schema=SCHEMA)
    assert failure.value.setting == "model"
    assert failure.value.attempts == 1
    assert "'gpt-4o'" in str(failure.value)


def test_unreachable_endpoint_names_base_url_after_retries() -> None:
    settings = Endpoint(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", timeout_seconds=1.0, max_retries=1)
    with pytest.raises(EndpointError) as failure:
        chat(settings, MESSAGES, json_schema=SCHEMA)
    assert failure.value.setting == "base_url"
    assert failure.value.attempts == 2
    assert settings.base_url in str(failure.value)


def test_404_that_is_not_about_the_model_names_base_url() -> None:
    # What a web server in front of the wrong path answers (a base_url without /v1, say).
    not_found = Reply(status=404, error_body={"detail": "Not Found"})
    with LoopbackLLM(script=lambda body, attempt: not_found) as server:
        with pytest.raises(EndpointError) as failure:
            chat(endpoint(server), MESSAGES)
    assert failure.value.setting == "base_url"
    assert "no chat completions route" in str(failure.value)


def test_check_endpoint_accepts_a_served_model_without_a_chat_call() -> None:
    with LoopbackLLM(models=("test-model", "other")) as server:
        check_endpoint(endpoint(server))
    assert server.chat_calls == 0


def test_check_endpoint_names_the_model_and_lists_what_is_served() -> None:
    with LoopbackLLM(models=("llama-3-8b", "qwen-2.5-7b")) as server:
        with pytest.raises(EndpointError) as failure:
            check_endpoint(endpoint(server, model="gpt-4o"))
    assert failure.value.setting == "model"
    assert "it serves: llama-3-8b, qwen-2.5-7b" in str(failure.value)


def test_check_endpoint_names_base_url_when_unreachable() -> None:
    settings = Endpoint(base_url=f"http://127.0.0.1:{free_port()}/v1", model="m", timeout_seconds=1.0, max_retries=0)
    with pytest.raises(EndpointError) as failure:
        check_endpoint(settings)
    assert failure.value.setting == "base_url"


def test_parallel_calls_share_the_client_and_probe_the_endpoint_only_a_few_times() -> None:
    with LoopbackLLM(reject_response_formats=("json_schema",)) as server:
        settings = endpoint(server)
        chat(settings, MESSAGES, json_schema=SCHEMA)  # learns that json_schema is refused
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda n: chat(settings, [{"role": "user", "content": f"n{n}"}], json_schema=SCHEMA),
                                    range(32)))
    assert all(answer.request_mode == "json_object" and answer.attempts == 1 for answer in answers)
    assert server.chat_calls == 2 + 32


def test_retry_after_header_forms() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "3600"}) == 30.0  # capped
    assert retry_after_seconds({"retry-after": "-4"}) == 0.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    in_ten_seconds = email.utils.formatdate(time.time() + 10, usegmt=True)
    asked = retry_after_seconds({"retry-after": in_ten_seconds})
    assert asked is not None and 8.0 <= asked <= 10.0
    in_the_past = email.utils.formatdate(time.time() - 100, usegmt=True)
    assert retry_after_seconds({"retry-after": in_the_past}) == 0.0


def test_endpoint_for_reads_the_judge_settings() -> None:
    judge = Judge(base_url="http://gpu-box:8000/v1", model="qwen", api_key_env="VLLM_KEY", timeout_seconds=12,
                  max_retries=2)
    assert endpoint_for(judge) == Endpoint("http://gpu-box:8000/v1", "qwen", "VLLM_KEY", 12.0, 2)
