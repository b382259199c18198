"""The rubric judge end to end against a real OpenAI-compatible server on loopback: every answer a score or a failure."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from judging.clients import Endpoint, endpoint_for, forget_request_modes
from judging.judges.rubric import RubricOutcome, build_request, call_rubric_judge, outcome_from_raw, request_cache_key
from judging.models import Judge
from judging.prompts import DEFAULT_RUBRIC, answer_schema
from tests.judging.llm_server import LoopbackLLM, Reply, user_text

REFERENCE = "The Harbour Bridge in Lintown reopened on Tuesday after eight weeks of repairs costing 12.4 million euros."

# What the scripted endpoint answers, chosen by a marker word in the hypothesis.
ANSWERS: dict[str, str | None] = {
    "clean": '{"reasoning": "Every detail is in the source.", "score": 5}',
    "prose": 'Sure. My assessment: {"reasoning": "The \\"nine weeks\\" contradicts the source.", "score": 2} Done.',
    "fence": '```json\n{"reasoning": "One adjective is unsupported.", "score": 4}\n```',
    "garbage": "I am unable to evaluate this summary.",
    "zero": '{"reasoning": "Bad.", "score": 0}',
    "seven": '{"reasoning": "Great.", "score": 7}',
    "word": '{"reasoning": "Fine.", "score": "four"}',
    "missing": '{"reasoning": "The output is faithful."}',
    "truncated": '{"reasoning": "The output states that the bridge',
    "empty": "",
    "null": None,
    "scoreonly": '{"score": 3}',
}


def script(body: dict[str, Any], attempt: int) -> Reply:
    text = user_text(body)
    if "failing" in text:
        return Reply(status=500)
    for marker, content in ANSWERS.items():
        if f"[{marker}]" in text:
            return Reply(content=content, prompt_tokens=200 + len(marker), completion_tokens=40)
    return Reply()


@pytest.fixture(autouse=True)
def fresh_request_modes() -> Iterator[None]:
    forget_request_modes()
    yield
    forget_request_modes()


@pytest.fixture
def server() -> Iterator[LoopbackLLM]:
    with LoopbackLLM(script=script, delay=0.02) as running:
        yield running


def judge_on(server: LoopbackLLM, *, with_reasoning: bool = True) -> Judge:
    return Judge(name="t", kind=Judge.Kind.RUBRIC, base_url=server.base_url, model="test-model",
                 with_reasoning=with_reasoning, timeout_seconds=5.0, max_retries=1)


def judge_answer(server: LoopbackLLM, marker: str, *, with_reasoning: bool = True) -> RubricOutcome:
    judge = judge_on(server, with_reasoning=with_reasoning)
    request = build_request(judge, DEFAULT_RUBRIC, f"[{marker}] The bridge reopened.", REFERENCE)
    return call_rubric_judge(endpoint_for(judge), request, with_reasoning=with_reasoning)


@pytest.mark.parametrize(
    ("marker", "score", "reasoning"),
    [
        ("clean", 5, "Every detail is in the source."),
        ("prose", 2, 'The "nine weeks" contradicts the source.'),
        ("fence", 4, "One adjective is unsupported."),
    ],
)
def test_answers_with_a_valid_score_are_ok(server: LoopbackLLM, marker: str, score: int, reasoning: str) -> None:
    outcome = judge_answer(server, marker)
    assert (outcome.status, outcome.score, outcome.reasoning, outcome.error) == ("ok", score, reasoning, "")
    assert outcome.raw == ANSWERS[marker]
    assert outcome.request_mode == "json_schema"
    assert outcome.attempts == 1


@pytest.mark.parametrize(
    ("marker", "error"),
    [
        ("garbage", "The answer holds no JSON object."),
        ("zero", "The score 0 is outside the scale 1 to 5."),
        ("seven", "The score 7 is outside the scale 1 to 5."),
        ("word", 'The score "four" is a string, not an integer from 1 to 5.'),
        ("missing", 'The JSON object has no "score" field.'),
        ("truncated", "The answer holds no complete JSON object (it may be truncated)."),
        ("empty", "The answer is empty."),
        ("null", "The answer is empty."),
    ],
)
def test_answers_without_a_valid_score_are_parse_errors_with_the_raw_kept(
    server: LoopbackLLM, marker: str, error: str
) -> None:
    outcome = judge_answer(server, marker)
    assert (outcome.status, outcome.score, outcome.error) == ("parse_error", None, error)
    assert outcome.raw == (ANSWERS[marker] or "")
    assert outcome.input_tokens == 200 + len(marker)
    assert outcome.output_tokens == 40


def test_tokens_and_latency_are_recorded(server: LoopbackLLM) -> None:
    outcome = judge_answer(server, "clean")
    assert (outcome.input_tokens, outcome.output_tokens) == (205, 40)
    assert outcome.latency_seconds is not None and outcome.latency_seconds >= 0.02  # the server waits 0.02 s


def test_endpoint_failure_is_status_error_with_the_message_and_no_raw(server: LoopbackLLM) -> None:
    outcome = judge_answer(server, "failing")
    assert outcome.status == "error"
    assert outcome.score is None and outcome.raw == "" and outcome.reasoning == ""
    assert "HTTP 500 after 2 attempts" in outcome.error
    assert outcome.attempts == 2
    # The run waited for this failure: both attempts and the backoff between them (at least 0.5 s).
    assert outcome.latency_seconds is not None and outcome.latency_seconds >= 0.5


def test_missing_api_key_variable_is_an_error_outcome_without_a_call(
    server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAITHLAB_NO_SUCH_KEY", raising=False)
    judge = judge_on(server)
    judge.api_key_env = "FAITHLAB_NO_SUCH_KEY"
    request = build_request(judge, DEFAULT_RUBRIC, "[clean] x", REFERENCE)
    outcome = call_rubric_judge(endpoint_for(judge), request, with_reasoning=True)
    assert outcome.status == "error" and "FAITHLAB_NO_SUCH_KEY" in outcome.error
    assert outcome.attempts == 0
    assert server.chat_calls == 0


def test_the_server_receives_the_rubric_then_the_output_before_the_source(server: LoopbackLLM) -> None:
    judge_answer(server, "clean")
    body = server.requests[0]
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"].startswith(DEFAULT_RUBRIC.strip())
    user = user_text(body)
    assert user.index("[clean] The bridge reopened.") < user.index(REFERENCE)
    assert body["temperature"] == 0.0


def test_score_only_mode_sends_its_schema_and_reads_the_score(server: LoopbackLLM) -> None:
    outcome = judge_answer(server, "scoreonly", with_reasoning=False)
    assert (outcome.status, outcome.score, outcome.reasoning) == ("ok", 3, "")
    sent_schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert sent_schema == answer_schema(False)
    assert "reasoning" not in sent_schema["properties"]


def test_score_only_mode_drops_volunteered_reasoning(server: LoopbackLLM) -> None:
    outcome = judge_answer(server, "clean", with_reasoning=False)
    assert (outcome.status, outcome.score, outcome.reasoning) == ("ok", 5, "")


def test_endpoint_without_structured_output_still_scores() -> None:
    with LoopbackLLM(script=script, reject_response_formats=("json_schema", "json_object")) as plain:
        outcome = judge_answer(plain, "fence")
    assert (outcome.status, outcome.score, outcome.request_mode, outcome.attempts) == ("ok", 4, "prompt", 3)


def test_outcome_from_raw_reparses_a_cached_answer_without_a_call() -> None:
    outcome = outcome_from_raw('{"reasoning": "r", "score": 1}', with_reasoning=True, request_mode="json_object",
                               input_tokens=10, output_tokens=5)
    assert outcome == RubricOutcome(status="ok", score=1, reasoning="r", raw='{"reasoning": "r", "score": 1}',
                                    error="", request_mode="json_object", latency_seconds=None, input_tokens=10,
                                    output_tokens=5, attempts=0)
    failed = outcome_from_raw('{"score": 9}', with_reasoning=False, request_mode="prompt", input_tokens=None,
                              output_tokens=None)
    assert (failed.status, failed.score, failed.error) == ("parse_error", None, "The score 9 is outside the scale 1 to 5.")


def test_cache_key_is_the_same_for_identical_calls_and_differs_with_what_decides_the_answer() -> None:
    base = Judge(base_url="http://a:8000/v1", model="m", with_reasoning=True)
    key = build_request(base, "R", "hypothesis", "reference").cache_key
    assert key == build_request(Judge(base_url="http://a:8000/v1/", model="m"), "R", "hypothesis", "reference").cache_key
    assert len(key) == 64 and int(key, 16) >= 0
    differing = [
        build_request(Judge(base_url="http://b:8000/v1", model="m"), "R", "hypothesis", "reference"),
        build_request(Judge(base_url="http://a:8000/v1", model="n"), "R", "hypothesis", "reference"),
        build_request(Judge(base_url="http://a:8000/v1", model="m", with_reasoning=False), "R", "hypothesis",
                      "reference"),
        build_request(base, "R2", "hypothesis", "reference"),
        build_request(base, "R", "hypothesis 2", "reference"),
        build_request(base, "R", "hypothesis", "reference 2"),
    ]
    assert len({key} | {request.cache_key for request in differing}) == 7


def test_cache_key_covers_the_temperature() -> None:
    arguments = {"base_url": "u", "model": "m", "messages": [{"role": "user", "content": "x"}],
                 "schema": answer_schema(True), "with_reasoning": True}
    assert request_cache_key(temperature=0.0, **arguments) != request_cache_key(temperature=0.7, **arguments)


def test_build_request_fields() -> None:
    judge = Judge(base_url="http://a/v1", model="m", with_reasoning=True)
    request = build_request(judge, "R", "h", "r")
    assert (request.model, request.temperature, request.schema) == ("m", 0.0, answer_schema(True))
    assert [message["role"] for message in request.messages] == ["system", "user"]
    assert isinstance(endpoint_for(judge), Endpoint)
