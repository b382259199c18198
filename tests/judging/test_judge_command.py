"""`manage.py judge --json` against a loopback server answering with a mix of clean JSON, prose, fences, garbage,
out-of-range scores and 429s: each answer scored or failed exactly; a second run makes no call (every answer, a parse
error too, comes from the cache), and one with --ask-again asks again only for the parse errors."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Project
from judging.models import CallCache, Judge, Judgement, JudgeRun, PromptVersion
from tests.judging.llm_server import InFlight, LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, closed_port_url, tag_of

pytestmark = pytest.mark.django_db

# What the server answers for each sample, and what the judgement must be: (status, score).
ANSWERS: dict[str, tuple[str, tuple[str, int | None]]] = {
    "s0": ('{"reasoning": "All supported.", "score": 5}', ("ok", 5)),
    "s1": ('Here is my verdict: {"reasoning": "One number is wrong.", "score": 2} I hope this helps.', ("ok", 2)),
    "s2": ('```json\n{"reasoning": "Mostly supported.", "score": 4}\n```', ("ok", 4)),
    "s3": ("The summary seems fine to me, I would say four out of five.", ("parse_error", None)),
    "s4": ('{"reasoning": "Great.", "score": 7}', ("parse_error", None)),
    "s5": ('{"reasoning": "Bad.", "score": 0}', ("parse_error", None)),
    "s6": ('{"reasoning": "Good.", "score": "four"}', ("parse_error", None)),
    "s7": ('{"reasoning": "The output says nine weeks', ("parse_error", None)),  # truncated
    "s8": ('{"reasoning": "No score given."}', ("parse_error", None)),
    "s9": ("", ("parse_error", None)),
    "s10": ('{"reasoning": "Fine after the wait.", "score": 3}', ("ok", 3)),  # first a 429
}


def mixed_script(body: dict, attempt: int) -> Reply:
    tag = tag_of(user_text(body))
    if tag == "s10" and attempt == 0:
        return Reply(status=429, headers={"Retry-After": "0"},
                     error_body={"error": {"message": "Rate limit reached", "type": "rate_limit"}})
    return Reply(content=ANSWERS[tag][0])


def judge_json(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("judge", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_every_answer_is_scored_or_failed_exactly_and_a_second_run_makes_no_call(project: Project) -> None:
    add_samples(project, len(ANSWERS))
    with LoopbackLLM(mixed_script) as server:
        args = ("--project", project.slug, "--base-url", server.base_url, "--model", "test-model")
        first = judge_json(*args)
        calls_after_first = server.chat_calls
        second = judge_json(*args)
        calls_after_second = server.chat_calls
    assert set(first) >= {"run", "items", "scored", "failed", "calls", "cached", "seconds", "judgements"}
    assert (first["items"], first["scored"], first["failed"], first["cached"]) == (11, 4, 7, 0)
    assert first["calls"] == 12 == calls_after_first  # eleven answers, one of them after a 429
    assert isinstance(first["seconds"], float) and first["seconds"] > 0
    by_sample = {entry["sample"]: entry for entry in first["judgements"]}
    assert set(by_sample) == set(ANSWERS)
    for tag, (raw, (status, score)) in ANSWERS.items():
        entry = by_sample[tag]
        assert (entry["status"], entry["score"]) == (status, score), tag
        assert entry["raw"] == (raw or None), tag  # the endpoint's last answer, as it came; none is null (the export's)
        assert set(entry) >= {"sample", "score", "reasoning", "status", "raw"}
    assert by_sample["s1"]["reasoning"] == "One number is wrong."
    assert by_sample["s4"]["reasoning"] == "" or by_sample["s4"]["score"] is None
    assert by_sample["s3"]["error"] and by_sample["s7"]["error"]

    # Every answer the endpoint gave, the seven parse errors too, comes from the cache: not one request is sent.
    assert calls_after_second == calls_after_first
    assert (second["items"], second["calls"], second["cached"]) == (11, 0, 11)
    assert {e["sample"]: (e["status"], e["score"]) for e in second["judgements"]} == {
        tag: expected for tag, (_, expected) in ANSWERS.items()}
    assert {e["sample"]: e["raw"] for e in second["judgements"]} == {tag: raw or None for tag, (raw, _) in ANSWERS.items()}
    assert second["run"] != first["run"]
    assert Judge.objects.filter(project=project).count() == 1  # the judge was reused
    assert not JudgeRun.objects.filter(ask_again=True).exists()


def test_ask_again_asks_only_the_parse_errors_and_a_now_clean_answer_becomes_a_score(project: Project) -> None:
    add_samples(project, len(ANSWERS))

    def script(body: dict, attempt: int) -> Reply:
        if tag_of(user_text(body)) == "s3" and attempt > 0:  # asked again, the prose answer comes back clean
            return Reply(content='{"reasoning": "Read this time.", "score": 4}')
        return mixed_script(body, attempt)

    with LoopbackLLM(script) as server:
        args = ("--project", project.slug, "--base-url", server.base_url, "--model", "test-model")
        judge_json(*args)
        calls_after_first = server.chat_calls
        again = judge_json(*args, "--ask-again")
        asked_again = sorted(tag_of(user_text(body)) for body in server.requests[calls_after_first:])
        calls_after_again = server.chat_calls
        third = judge_json(*args)
        calls_after_third = server.chat_calls

    parse_errors = sorted(tag for tag, (_, (status, _)) in ANSWERS.items() if status == "parse_error")
    assert asked_again == parse_errors  # the four scores came from the cache
    assert (again["items"], again["calls"], again["cached"], again["scored"]) == (11, 7, 4, 5)
    expected = {tag: status_score for tag, (_, status_score) in ANSWERS.items()} | {"s3": ("ok", 4)}
    assert {e["sample"]: (e["status"], e["score"]) for e in again["judgements"]} == expected
    assert JudgeRun.objects.get(pk=again["run"]).ask_again is True
    # The new answers replaced the rows: a run without the option serves them, s3's score included, calling nothing.
    assert calls_after_third == calls_after_again
    assert (third["calls"], third["cached"]) == (0, 11)
    assert {e["sample"]: (e["status"], e["score"]) for e in third["judgements"]} == expected
    assert CallCache.objects.count() == 11


def test_persistent_rate_limits_end_as_errors_with_no_score(project: Project) -> None:
    add_samples(project, 2)

    def script(body: dict, attempt: int) -> Reply:
        if tag_of(user_text(body)) == "s1":
            return Reply(status=429, headers={"Retry-After": "0"})
        return Reply(content='{"reasoning": "ok", "score": 4}')

    with LoopbackLLM(script) as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model")
    by_sample = {entry["sample"]: entry for entry in result["judgements"]}
    assert (by_sample["s1"]["status"], by_sample["s1"]["score"], by_sample["s1"]["raw"]) == ("error", None, None)
    assert "429" in by_sample["s1"]["error"]
    assert (result["scored"], result["failed"], result["calls"]) == (1, 1, 1 + 5)  # 4 retries by default


def test_score_only_asks_for_the_score_alone(project: Project) -> None:
    add_samples(project, 2)
    with LoopbackLLM(lambda body, attempt: Reply(content='{"score": 3}')) as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                            "--score-only")
    assert [entry["score"] for entry in result["judgements"]] == [3, 3]
    schema = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == ["score"]
    assert Judge.objects.get().name == "test-model (score only)"


def test_concurrency_option_sets_the_calls_in_flight(project: Project) -> None:
    add_samples(project, 12)
    script = InFlight(0.1)
    with LoopbackLLM(script) as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                            "--concurrency", "6")
    assert result["scored"] == 12 and script.most == 6
    assert Judge.objects.get().concurrency == 6


def test_flagged_samples_only(project: Project) -> None:
    samples = add_samples(project, 4)
    from judging.models import AuditItem

    AuditItem.objects.create(project=project, sample=samples[2], reason="by hand")
    with LoopbackLLM() as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                            "--samples", "flagged")
    assert [entry["sample"] for entry in result["judgements"]] == ["s2"] and server.chat_calls == 1


def assert_nothing_written() -> None:
    assert not Judge.objects.exists() and not JudgeRun.objects.exists()
    assert not Judgement.objects.exists() and not CallCache.objects.exists() and not PromptVersion.objects.exists()


def test_bad_input_is_refused_naming_the_option_with_nothing_written(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 2)
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    monkeypatch.delenv("FAITHLAB_TEST_UNSET", raising=False)
    unreachable = closed_port_url()
    key = "sk-" + "a1B2c3" * 8
    with LoopbackLLM() as server:
        cases = [
            (("--project", "nope", "--base-url", server.base_url, "--model", "test-model"),
             ["no project with slug 'nope'"]),
            (("--project", pairs.slug, "--base-url", server.base_url, "--model", "test-model"),
             ["pairs project"]),
            (("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
              "--api-key-env", "FAITHLAB_TEST_UNSET"), ["--api-key-env", "FAITHLAB_TEST_UNSET", "not set"]),
            (("--project", project.slug, "--base-url", unreachable, "--model", "test-model"),
             ["--base-url", unreachable]),
            (("--project", project.slug, "--base-url", server.base_url, "--model", "no-such-model"),
             ["--model", "no-such-model"]),
            (("--project", project.slug, "--base-url", "localhost:8000/v1", "--model", "test-model"),
             ["--base-url", "http(s) URL"]),
            (("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
              "--concurrency", "0"), ["--concurrency"]),
            (("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
              "--concurrency", "999"), ["--concurrency", "256"]),
        ]
        for args, words in cases:
            with pytest.raises(CommandError) as caught:
                call_command("judge", *args, "--json", stdout=io.StringIO())
            for word in words:
                assert word in str(caught.value), (args, str(caught.value))
            assert_nothing_written()
        with pytest.raises(CommandError) as caught:
            call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model",
                         "test-model", "--api-key-env", key, stdout=io.StringIO())
        assert "--api-key-env" in str(caught.value) and key not in str(caught.value)
        assert_nothing_written()
        # The only chat request was the one-token probe that found the model missing.
        assert [(body["model"], body.get("max_tokens")) for body in server.requests] == [("no-such-model", 1)]


def test_a_key_from_the_named_variable_is_sent(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    add_samples(project, 1)
    monkeypatch.setenv("FAITHLAB_TEST_KEY", "sk-test-123456")
    with LoopbackLLM() as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                            "--api-key-env", "FAITHLAB_TEST_KEY")
    assert result["scored"] == 1
    sent = {value for headers in server.headers_seen for name, value in headers.items()
            if name.lower() == "authorization"}
    assert sent == {"Bearer sk-test-123456"}
    assert Judge.objects.get().api_key_env == "FAITHLAB_TEST_KEY"


def test_price_options_price_the_first_run_and_are_kept_on_the_judge(project: Project) -> None:
    add_samples(project, 2)
    with LoopbackLLM(lambda body, attempt: Reply(content='{"score": 3}')) as server:  # 120 in, 30 out a call
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                            "--price-input", "2.5", "--price-output", "10")
        again = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model")
    # 2 calls x (120 x 2.5 + 30 x 10) / 1e6 = 0.0012, by hand
    assert (result["calls"], result["input_tokens"], result["output_tokens"]) == (2, 240, 60)
    assert result["cost"] == pytest.approx(0.0012, abs=1e-12)
    judge = Judge.objects.get()
    assert (judge.price_input_per_mtok, judge.price_output_per_mtok) == (2.5, 10.0)
    assert (again["calls"], again["cost"]) == (0, 0.0)  # from the cache, nothing paid; the prices stay


def test_a_bad_price_is_refused_naming_the_option(project: Project) -> None:
    add_samples(project, 1)
    with pytest.raises(CommandError, match="^--price-output: "):
        call_command("judge", "--project", project.slug, "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                     "--price-output", "-1")
    assert_nothing_written()
