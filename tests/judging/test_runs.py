"""Judge runs against a real OpenAI-compatible server on loopback: per-call records, concurrency, the call cache,
resumption, failures recorded as failures, and an API key that never reaches the database or the log."""

from __future__ import annotations

import json
import logging
import secrets
from pathlib import Path
from typing import Any

import pytest
from django.core import serializers

from annotate.models import Project, Sample
from annotate.text import split_sentences
from judging import tasks
from judging.clients import load_nli_model
from judging.judges.nli import score_pairs
from judging.models import CallCache, Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import JudgeSettingsError, create_judge, current_prompt
from tests.judging.broker_queue import publish, use_broker_queue
from tests.judging.llm_server import InFlight, LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, closed_port_url, tag_of
from tests.judging.tiny_nli import reference_text, tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)

pytestmark = pytest.mark.django_db


def rubric_judge(project: Project, server: LoopbackLLM | str, **settings: Any) -> Judge:
    base_url = server if isinstance(server, str) else server.base_url
    values = {"name": "loop", "kind": "rubric", "base_url": base_url, "model": "test-model"} | settings
    return create_judge(project, **values)


def run_once(project: Project, judge: Judge, **options: Any) -> JudgeRun:
    run = runs.start_run(project, judge, queue=False, **options)
    return runs.execute_run(run.pk)


def test_a_run_records_every_call(project: Project) -> None:
    add_samples(project, 5)

    def script(body: dict, attempt: int) -> Reply:
        tag = tag_of(user_text(body))
        score = {"s0": 1, "s1": 2, "s2": 3}.get(tag, 5)
        return Reply(content=json.dumps({"reasoning": f"checked {tag}", "score": score}),
                     prompt_tokens=1000, completion_tokens=200)

    with LoopbackLLM(script) as server:
        judge = rubric_judge(project, server, price_input_per_mtok=2.0, price_output_per_mtok=10.0)
        run = run_once(project, judge)
    assert server.chat_calls == 5
    assert (run.status, run.total, run.done, run.scored, run.failed, run.calls, run.cached) == (
        JudgeRun.Status.DONE, 5, 5, 5, 0, 5, 0)
    assert run.rubric == current_prompt(project, "rubric") and run.finished_at >= run.started_at
    by_tag = {j.sample.external_id: j for j in run.judgements.select_related("sample")}
    assert {tag: j.score for tag, j in by_tag.items()} == {"s0": 1, "s1": 2, "s2": 3, "s3": 5, "s4": 5}
    first = by_tag["s0"]
    assert first.status == "ok" and first.reasoning == "checked s0"
    assert first.raw == '{"reasoning": "checked s0", "score": 1}'
    assert first.prompt_version == run.rubric and first.request_mode == "json_schema"
    assert (first.input_tokens, first.output_tokens, first.attempts, first.cached) == (1000, 200, 1, False)
    assert first.cost == pytest.approx((1000 * 2.0 + 200 * 10.0) / 1e6)  # $0.004
    assert first.latency_seconds is not None and first.latency_seconds > 0
    # The request asked for structured output, at temperature 0, output first and source second.
    body = server.requests[0]
    assert body["temperature"] == 0 and body["response_format"]["type"] == "json_schema"
    user = user_text(body)
    assert user.index("The council approved") < user.index("Mayor Ines Varga")


def test_calls_run_concurrently_up_to_the_judges_limit(project: Project) -> None:
    add_samples(project, 16)
    script = InFlight(0.15)
    with LoopbackLLM(script) as server:
        run = run_once(project, rubric_judge(project, server, concurrency=4))
    assert run.scored == 16 and server.chat_calls == 16
    assert script.most == 4  # never more than the judge's concurrency, and more than one at once


def test_a_second_run_makes_no_call_and_answers_everything_from_the_cache(project: Project) -> None:
    add_samples(project, 6)
    with LoopbackLLM() as server:
        judge = rubric_judge(project, server)
        first = run_once(project, judge)
        calls_after_first = len(server.requests)
        second = run_once(project, judge)
        requests_after_second = len(server.requests)
    assert (first.calls, first.cached) == (6, 0)
    assert (second.calls, second.cached, second.scored, second.done) == (0, 6, 6, 6)
    assert requests_after_second == calls_after_first  # not one request, not even a check
    assert CallCache.objects.count() == 6 and set(CallCache.objects.values_list("hits", flat=True)) == {1}
    cached = second.judgements.first()
    assert cached.cached and cached.attempts == 0 and cached.cost == 0.0 and cached.score == 5
    assert cached.reasoning == "Every statement is supported by the source."


def test_identical_requests_in_one_run_are_sent_once(project: Project) -> None:
    samples = add_samples(project, 4)
    Sample.objects.filter(pk=samples[1].pk).update(summary=samples[0].summary, passage=samples[0].passage)
    with LoopbackLLM() as server:
        run = run_once(project, rubric_judge(project, server))
    assert server.chat_calls == 3
    assert (run.done, run.scored, run.calls, run.cached) == (4, 4, 3, 1)


def test_resume_judges_only_what_is_missing_and_never_twice(project: Project) -> None:
    samples = add_samples(project, 8)
    with LoopbackLLM() as server:
        judge = rubric_judge(project, server)
        run = runs.start_run(project, judge, queue=False)
        # A worker was killed after writing three judgements: the run is still "running".
        for sample in samples[:3]:
            Judgement.objects.create(run=run, sample=sample, status="ok", score=2, raw="before the restart",
                                     attempts=1)
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
        run = runs.execute_run(run.pk)
        assert server.chat_calls == 5
        assert {tag_of(user_text(body)) for body in server.requests} == {f"s{i}" for i in range(3, 8)}
        # Delivered again after it finished: nothing happens.
        again = runs.execute_run(run.pk)
        assert server.chat_calls == 5
        # Delivered again while marked running (a resumed run whose work is all written): no call, no duplicate.
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
        runs.execute_run(run.pk)
        assert server.chat_calls == 5
    assert again.status == JudgeRun.Status.DONE and (again.done, again.scored, again.calls) == (8, 8, 8)
    assert Judgement.objects.filter(run=run).count() == 8
    assert Judgement.objects.filter(run=run).values("sample").distinct().count() == 8
    assert list(Judgement.objects.filter(run=run, sample__in=samples[:3]).values_list("raw", flat=True)) == [
        "before the restart"] * 3


def test_a_run_held_by_another_process_is_left_to_it(project: Project) -> None:
    add_samples(project, 2)
    with LoopbackLLM() as server:
        run = runs.start_run(project, rubric_judge(project, server), queue=False)
        with runs.execution_lock(run.pk) as held:
            assert held and runs.is_run_executing(run.pk)
            untouched = runs.execute_run(run.pk)
        assert untouched.status == JudgeRun.Status.QUEUED and server.chat_calls == 0
        assert not runs.is_run_executing(run.pk)
        assert runs.execute_run(run.pk).status == JudgeRun.Status.DONE


def test_rate_limits_server_errors_and_timeouts_end_as_scores_or_errors(project: Project) -> None:
    add_samples(project, 5)

    def script(body: dict, attempt: int) -> Reply:
        tag = tag_of(user_text(body))
        if tag == "s0" and attempt == 0:
            return Reply(status=429, headers={"Retry-After": "0"})
        if tag == "s1":
            return Reply(status=500)
        if tag == "s2" and attempt == 0:
            return Reply(sleep=1.5)  # longer than the judge's timeout
        if tag == "s3":
            return Reply(sleep=1.5)
        return Reply(content='{"reasoning": "fine", "score": 4}')

    with LoopbackLLM(script) as server:
        run = run_once(project, rubric_judge(project, server, max_retries=1, timeout_seconds=0.5))
    by_tag = {j.sample.external_id: j for j in run.judgements.select_related("sample")}
    assert (by_tag["s0"].status, by_tag["s0"].score, by_tag["s0"].attempts) == ("ok", 4, 2)
    assert (by_tag["s2"].status, by_tag["s2"].score, by_tag["s2"].attempts) == ("ok", 4, 2)
    assert (by_tag["s4"].status, by_tag["s4"].score, by_tag["s4"].attempts) == ("ok", 4, 1)
    for tag, words in (("s1", "HTTP 500"), ("s3", "did not answer within 0.5 s")):
        failed = by_tag[tag]
        assert (failed.status, failed.score, failed.raw, failed.attempts) == ("error", None, "", 2)
        assert words in failed.error
    assert (run.scored, run.failed, run.calls) == (3, 2, 2 + 2 + 2 + 2 + 1)
    # Errors are not cached (the next run asks again); answers are.
    assert CallCache.objects.count() == 3


def test_unreachable_endpoint_fails_the_run_naming_base_url_with_nothing_written(project: Project) -> None:
    add_samples(project, 3)
    url = closed_port_url()
    run = run_once(project, rubric_judge(project, url))
    assert run.status == JudgeRun.Status.FAILED and run.finished_at is not None
    assert "“Endpoint (base URL)”" in run.error and "base_url" not in run.error and url in run.error
    assert not Judgement.objects.exists() and not CallCache.objects.exists()


def test_wrong_model_fails_the_run_naming_model(project: Project) -> None:
    add_samples(project, 2)
    with LoopbackLLM(models=("other-model",)) as server:
        run = run_once(project, rubric_judge(project, server))
    assert run.status == JudgeRun.Status.FAILED
    assert "model" in run.error and "'test-model'" in run.error
    assert not Judgement.objects.exists()


def test_key_variable_gone_when_the_run_executes_fails_it_naming_the_variable(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 2)
    monkeypatch.setenv("FAITHLAB_TEST_RUN_KEY", "sk-test-" + secrets.token_hex(8))
    with LoopbackLLM() as server:
        run = runs.start_run(project, rubric_judge(project, server, api_key_env="FAITHLAB_TEST_RUN_KEY"),
                             queue=False)
        monkeypatch.delenv("FAITHLAB_TEST_RUN_KEY")
        run = runs.execute_run(run.pk)
    assert run.status == JudgeRun.Status.FAILED and "FAITHLAB_TEST_RUN_KEY" in run.error
    assert server.chat_calls == 0 and not Judgement.objects.exists()


def test_the_api_key_never_reaches_the_database_or_the_log(
    project: Project, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    key = "sk-test-" + secrets.token_hex(16)
    monkeypatch.setenv("FAITHLAB_TEST_SECRET", key)
    add_samples(project, 4)

    def script(body: dict, attempt: int) -> Reply:
        if tag_of(user_text(body)) == "s1":  # a server that echoes the key it refuses
            return Reply(status=401, error_body={"error": {"message": f"Incorrect API key provided: {key}",
                                                           "type": "invalid_request_error"}})
        return Reply()

    with LoopbackLLM(script) as server:
        judge = rubric_judge(project, server, api_key_env="FAITHLAB_TEST_SECRET")
        run = run_once(project, judge)
        run_once(project, judge)
    sent = [value for headers in server.headers_seen for name, value in headers.items()
            if name.lower() == "authorization"]
    assert f"Bearer {key}" in sent  # it was used
    assert run.status == JudgeRun.Status.DONE and run.failed == 1
    refused = Judgement.objects.get(run=run, sample__external_id="s1")
    assert refused.status == "error" and "“API key variable”" in refused.error and "FAITHLAB_TEST_SECRET" in refused.error
    rows = [*Judge.objects.all(), *JudgeRun.objects.all(), *CallCache.objects.all(), *Judgement.objects.all()]
    stored = serializers.serialize("json", rows)
    assert key not in stored and "FAITHLAB_TEST_SECRET" in stored
    assert key not in caplog.text and "judge run" in caplog.text


def test_runs_cover_a_batch_or_the_flagged_samples(project: Project) -> None:
    first = add_samples(project, 3, batch_name="one")
    second = add_samples(project, 2, batch_name="two", first=100)
    from judging.models import AuditItem

    AuditItem.objects.create(project=project, sample=first[0], reason="by hand")
    AuditItem.objects.create(project=project, sample=second[1], reason="by hand")
    with LoopbackLLM() as server:
        judge = rubric_judge(project, server)
        batch_run = run_once(project, judge, scope="batch", batch=second[0].batch)
        flagged_run = run_once(project, judge, scope="flagged")
    assert set(batch_run.judgements.values_list("sample", flat=True)) == {s.pk for s in second}
    assert set(flagged_run.judgements.values_list("sample", flat=True)) == {first[0].pk, second[1].pk}
    assert (flagged_run.total, flagged_run.cached) == (2, 1)  # second[1] was judged by the batch run


def test_latest_judgements_come_from_each_judges_most_recent_run(project: Project) -> None:
    samples = add_samples(project, 2)

    def later(body: dict, attempt: int) -> Reply:
        return Reply(content='{"reasoning": "r", "score": 2}')

    with LoopbackLLM() as server:
        judge = rubric_judge(project, server)
        old = run_once(project, judge)
    with LoopbackLLM(later) as server:
        other = rubric_judge(project, server, name="other")
        newer = run_once(project, other)
    latest = runs.latest_judgements(project)
    assert set(latest) == {judge.pk, other.pk}
    assert {j.run_id for j in latest[judge.pk].values()} == {old.pk}
    assert {j.score for j in latest[other.pk].values()} == {2} and set(latest[other.pk]) == {s.pk for s in samples}
    # A newer run of the same judge replaces the older judgement.
    again = run_once(project, judge)
    assert {j.run_id for j in runs.latest_judgements(project, judge)[judge.pk].values()} == {again.pk}
    assert runs.latest_judgements(project, judge).keys() == {judge.pk}
    assert newer.pk != again.pk


def test_nli_run_scores_pairs_and_each_sentence_on_a_first_pass_and_a_plain_run(project: Project, tiny_nli_path: str) -> None:
    samples = add_samples(project, 3)
    too_long = reference_text(600, seed=3)  # no room for any reference token beside it
    Sample.objects.filter(pk=samples[2].pk).update(summary=too_long)
    judge = create_judge(project, name="tiny", kind="nli", nli_model_path=tiny_nli_path)
    run = run_once(project, judge, purpose="first_pass")
    assert (run.status, run.scored, run.failed, run.calls) == (JudgeRun.Status.DONE, 2, 1, 0)
    model = load_nli_model(tiny_nli_path)
    for sample in samples[:2]:
        sample.refresh_from_db()
        judgement = Judgement.objects.get(run=run, sample=sample)
        [expected] = score_pairs(model, [(sample.passage.text, sample.summary)])
        assert judgement.status == "ok" and judgement.score is None
        assert judgement.probability == pytest.approx(expected, abs=1e-5)
        spans = split_sentences(sample.summary)
        assert len(spans) == 2 and len(judgement.sentence_scores) == 2  # one p per output sentence, in order
        expected_sentences = score_pairs(model, [(sample.passage.text, sample.summary[s:e]) for s, e in spans])
        assert judgement.sentence_scores == pytest.approx(expected_sentences, abs=1e-5)
    failed = Judgement.objects.get(run=run, sample=samples[2])
    assert failed.status == "error" and failed.probability is None and "600 tokens" in failed.error
    # A plain run scores the sentences too: whichever run of the judge is the latest, the audit page shades them.
    plain = run_once(project, judge)
    assert {j.sample_id: j.sentence_scores for j in plain.judgements.filter(status="ok")} == {
        j.sample_id: j.sentence_scores for j in run.judgements.filter(status="ok")}


def test_a_synthetic_set_run_judges_its_items_against_their_samples_source(project: Project) -> None:
    from judging.models import SyntheticItem, SyntheticSet

    sample = add_samples(project, 1)[0]
    synthetic_set = SyntheticSet.objects.create(project=project, name="rewrites", status="done")
    gold = SyntheticItem.objects.create(synthetic_set=synthetic_set, sample=sample, type="gold", percent=0,
                                        text="The council approved the budget [gold].")
    changed = SyntheticItem.objects.create(synthetic_set=synthetic_set, sample=sample, type="intrinsic",
                                           percent=100, replaced=[0], text="The mayor vetoed the budget [bad].")

    def script(body: dict, attempt: int) -> Reply:
        return Reply(content='{"reasoning": "r", "score": 1}' if "[bad]" in user_text(body) else
                     '{"reasoning": "r", "score": 5}')

    with LoopbackLLM(script) as server:
        run = run_once(project, rubric_judge(project, server), scope="synthetic", synthetic_set=synthetic_set)
    assert run.total == 2 and {j.synthetic_item_id: j.score for j in run.judgements.all()} == {gold.pk: 5,
                                                                                               changed.pk: 1}
    assert not run.judgements.filter(sample__isnull=False).exists()
    assert all("Mayor Ines Varga said" in user_text(body) for body in server.requests)  # the sample's source
    assert runs.latest_judgements(project) == {}  # samples only


def test_an_nli_judge_saved_before_its_model_is_copied_in_cannot_start_a_run(project: Project, tmp_path: Any) -> None:
    """The judge may be saved pointing at an empty folder; starting a run refuses at once, naming the setting, instead
    of queueing a run that fails on the worker."""
    add_samples(project, 2)
    judge = create_judge(project, name="empty", kind="nli", nli_model_path=str(tmp_path))
    with pytest.raises(JudgeSettingsError) as refused:
        runs.start_run(project, judge, queue=False)
    assert refused.value.field == "nli_model_path" and "no config.json" in str(refused.value)
    assert not JudgeRun.objects.exists() and not Judgement.objects.exists()


def test_an_nli_judge_whose_model_went_missing_after_the_start_fails_the_run_naming_the_setting(
    project: Project, tiny_nli_path: str, tmp_path: Any
) -> None:
    import shutil

    add_samples(project, 2)
    folder = tmp_path / "model"
    shutil.copytree(tiny_nli_path, folder)
    judge = create_judge(project, name="moved", kind="nli", nli_model_path=str(folder))
    run = runs.start_run(project, judge, queue=False)
    shutil.rmtree(folder)
    folder.mkdir()
    run = runs.execute_run(run.pk)
    assert run.status == JudgeRun.Status.FAILED and run.error.startswith("Model directory (on the server) ")
    assert not Judgement.objects.exists()


def test_a_slice_stops_at_its_deadline_and_queues_the_rest(
    project: Project, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 3)
    with LoopbackLLM() as server:
        run = runs.start_run(project, rubric_judge(project, server), queue=False)
        with django_capture_on_commit_callbacks(execute=False) as queued:
            sliced = runs.execute_run(run.pk, max_seconds=0)
        assert sliced.status == JudgeRun.Status.RUNNING and len(queued) == 1 and server.chat_calls == 0
        finished = runs.execute_run(run.pk)
    assert finished.status == JudgeRun.Status.DONE and finished.done == 3


def test_a_slice_queues_the_next_one_only_once_the_run_s_lock_is_free(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Queued while the slice still held the lock, the next slice's message could be taken at once by another pool
    process, which found the lock taken and returned: the run then waited for a worker's restart."""
    from judging.services.runs import execute

    add_samples(project, 3)
    held_when_queued: list[bool] = []
    monkeypatch.setattr(execute, "_queue_now", lambda run_id: held_when_queued.append(runs.is_run_executing(run_id)))
    with LoopbackLLM() as server:
        run = runs.start_run(project, rubric_judge(project, server), queue=False)
        sliced = runs.execute_run(run.pk, max_seconds=0)
    assert sliced.status == JudgeRun.Status.RUNNING
    assert held_when_queued == [False]


def test_a_starting_worker_requeues_running_runs_that_nobody_executes(
    project: Project, django_capture_on_commit_callbacks: Any, settings: Any, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    use_broker_queue(settings, tmp_path, monkeypatch)
    add_samples(project, 2)
    judge = rubric_judge(project, "http://127.0.0.1:9/v1")
    orphaned, held, waiting, done = (runs.start_run(project, judge, queue=False) for _ in range(4))
    JudgeRun.objects.filter(pk__in=[orphaned.pk, held.pk]).update(status=JudgeRun.Status.RUNNING)
    JudgeRun.objects.filter(pk=done.pk).update(status=JudgeRun.Status.DONE)
    publish(tasks.execute_judge_run, waiting.pk)  # the queued run's message, waiting for a worker
    with runs.execution_lock(held.pk), django_capture_on_commit_callbacks(execute=False) as queued:
        assert runs.resume_stale_runs() == [orphaned.pk]
    assert len(queued) == 1
    assert waiting.status == JudgeRun.Status.QUEUED  # its message is still in the queue


def test_a_judgement_written_twice_by_overlapping_executions_stays_one(project: Project) -> None:
    sample = add_samples(project, 1)[0]
    run = runs.start_run(project, rubric_judge(project, "http://127.0.0.1:9/v1"), queue=False)
    Judgement.objects.create(run=run, sample=sample, status="ok", score=4, raw="first", attempts=1)
    writer = runs._ResultWriter(run)
    writer.add(Judgement(run=run, sample=sample, status="ok", score=2, raw="second", attempts=1))
    writer.flush()
    assert list(Judgement.objects.filter(run=run).values_list("raw", "score")) == [("first", 4)]
    run.refresh_from_db()
    assert (run.done, run.scored, run.calls) == (1, 1, 1)
