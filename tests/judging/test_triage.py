"""Triage: thresholds flag exactly at their boundaries, failures never flag, and the explainer judges only the
flagged samples."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Project
from judging.models import AuditItem, Judgement, JudgeRun, JudgingSettings
from judging.services import runs, triage
from judging.services.judges import JudgeSettingsError, create_judge, update_judging_settings
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, tag_of

pytestmark = pytest.mark.django_db

# First-pass answers by sample: s0 score 3 (flagged at <= 3), s1 score 4 (not), s2 garbage (a parse error: never
# flagged), s3 score 1 (flagged), s4 an endpoint error (never flagged).
FIRST_PASS = {"s0": '{"score": 3}', "s1": '{"score": 4}', "s2": "I cannot decide.", "s3": '{"score": 1}'}


def first_pass_script(body: dict, attempt: int) -> Reply:
    tag = tag_of(user_text(body))
    if tag == "s4":
        return Reply(status=400, error_body={"error": {"message": "context too long", "type": "invalid_request"}})
    return Reply(content=FIRST_PASS[tag])


def judgement(status: str = "ok", score: int | None = None, probability: float | None = None) -> Judgement:
    return Judgement(status=status, score=score, probability=probability)


@pytest.mark.parametrize(("score", "flagged"), [(1, True), (3, True), (4, False), (5, False)])
def test_llm_score_flags_at_or_below_the_threshold(score: int, flagged: bool) -> None:
    assert triage.is_flagged(judgement(score=score), JudgingSettings()) is flagged


@pytest.mark.parametrize(("p", "flagged"), [(0.0, True), (0.49, True), (0.4999, True), (0.5, False), (0.9, False)])
def test_nli_p_flags_strictly_below_the_threshold(p: float, flagged: bool) -> None:
    assert triage.is_flagged(judgement(probability=p), JudgingSettings()) is flagged


def test_failed_judgements_never_flag() -> None:
    assert not triage.is_flagged(judgement(status="parse_error"), JudgingSettings())
    assert not triage.is_flagged(judgement(status="error"), JudgingSettings())


def test_project_thresholds_move_the_boundaries() -> None:
    strict = JudgingSettings(llm_flag_at_most=2, nli_flag_below=0.3)
    assert not triage.is_flagged(judgement(score=3), strict) and triage.is_flagged(judgement(score=2), strict)
    assert not triage.is_flagged(judgement(probability=0.3), strict)
    assert triage.is_flagged(judgement(probability=0.29), strict)


def triage_project(project: Project, first_server: LoopbackLLM, explainer_server: LoopbackLLM | None) -> None:
    first = create_judge(project, name="fast", kind="rubric", base_url=first_server.base_url, model="test-model",
                         with_reasoning=False, max_retries=0)
    settings: dict[str, Any] = {"first_pass": first}
    if explainer_server is not None:
        settings["explainer"] = create_judge(project, name="strong", kind="rubric",
                                             base_url=explainer_server.base_url, model="test-model")
    update_judging_settings(project, **settings)


def test_a_first_pass_flags_below_the_threshold_and_the_explainer_runs_on_the_flagged_only(project: Project) -> None:
    samples = add_samples(project, 5)
    with LoopbackLLM(first_pass_script) as fast, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        first = triage.start_triage(project, queue=False)
        first = runs.execute_run(first.pk, follow_up=False)
        assert first.status == JudgeRun.Status.DONE and (first.scored, first.failed, first.flagged) == (3, 2, 2)
        items = AuditItem.objects.filter(project=project).select_related("sample", "flagged_by")
        assert {item.sample.external_id for item in items} == {"s0", "s3"}
        reasons = {item.sample.external_id: item.reason for item in items}
        assert reasons["s0"] == f"score 3 <= 3 from judge fast (run {first.pk})"
        assert all(item.flagged_by.run_id == first.pk for item in items)

        explain = triage.start_explanation(first, queue=False)
        explain = runs.execute_run(explain.pk)
    assert explain.purpose == JudgeRun.Purpose.EXPLAIN and explain.scope == JudgeRun.Scope.FLAGGED
    assert {tag_of(user_text(body)) for body in strong.requests} == {"s0", "s3"}
    assert set(explain.judgements.values_list("sample", flat=True)) == {samples[0].pk, samples[3].pk}
    assert all(j.reasoning for j in explain.judgements.all())


def test_flagging_twice_keeps_one_audit_item_per_sample(project: Project) -> None:
    add_samples(project, 5)
    with LoopbackLLM(first_pass_script) as fast:
        triage_project(project, fast, None)
        for _ in range(2):
            run = runs.execute_run(triage.start_triage(project, queue=False).pk)
            assert run.flagged == 2
    assert AuditItem.objects.filter(project=project).count() == 2


def test_a_finished_first_pass_queues_the_explainer(
    project: Project, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 5)
    with LoopbackLLM(first_pass_script) as fast, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        first = triage.start_triage(project, queue=False)
        with django_capture_on_commit_callbacks(execute=False) as queued:
            runs.execute_run(first.pk)
    explain = JudgeRun.objects.get(purpose=JudgeRun.Purpose.EXPLAIN)
    assert explain.status == JudgeRun.Status.QUEUED and explain.total == 2 and len(queued) == 1
    assert strong.chat_calls == 0


def test_no_explainer_run_when_nothing_is_flagged(project: Project) -> None:
    add_samples(project, 2, first=1)  # s1 (score 4) and s2 (a parse error)
    with LoopbackLLM(first_pass_script) as fast, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        first = runs.execute_run(triage.start_triage(project, queue=False).pk, follow_up=False)
        assert first.flagged == 0 and triage.start_explanation(first, queue=False) is None


def test_triage_without_a_first_pass_judge_is_refused(project: Project) -> None:
    with pytest.raises(JudgeSettingsError) as caught:
        triage.start_triage(project)
    assert caught.value.field == "first_pass"
    with pytest.raises(CommandError, match="first_pass"):
        call_command("triage", "--project", project.slug)
    assert not JudgeRun.objects.exists()


def test_triage_command_runs_the_first_pass_and_the_explainer_in_the_foreground(project: Project) -> None:
    add_samples(project, 5, batch_name="one")
    add_samples(project, 4, batch_name="two", first=100)  # s100.. are not in FIRST_PASS: --batch keeps them out
    out = io.StringIO()
    with LoopbackLLM(first_pass_script) as fast, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        call_command("triage", "--project", project.slug, "--batch", "one", "--json", stdout=out)
        with pytest.raises(CommandError, match="no batch 'three'"):
            call_command("triage", "--project", project.slug, "--batch", "three")
    result = json.loads(out.getvalue())
    assert result["flagged"] == 2
    assert (result["first_pass"]["items"], result["first_pass"]["scored"], result["first_pass"]["failed"]) == (5, 3, 2)
    assert (result["explain"]["items"], result["explain"]["scored"], result["explain"]["status"]) == (2, 2, "done")
    assert {tag_of(user_text(body)) for body in strong.requests} == {"s0", "s3"}


def test_an_explainer_that_cannot_start_is_noted_on_the_finished_first_pass(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key variable was set where triage started (the web server) but not where the first pass finishes (a
    worker without it): the first pass is done, and says why no explainer followed."""
    add_samples(project, 5)
    monkeypatch.setenv("FAITHLAB_TEST_NO_KEY", "sk-test")
    with LoopbackLLM(first_pass_script) as fast:
        triage_project(project, fast, None)
        strong = create_judge(project, name="strong", kind="rubric", base_url=fast.base_url, model="test-model",
                              api_key_env="FAITHLAB_TEST_NO_KEY")
        update_judging_settings(project, explainer=strong)
        started = triage.start_triage(project, queue=False)
        monkeypatch.delenv("FAITHLAB_TEST_NO_KEY")
        first = runs.execute_run(started.pk)
    assert first.status == JudgeRun.Status.DONE and first.flagged == 2
    assert "explainer was not started" in first.error and "FAITHLAB_TEST_NO_KEY" in first.error
    assert not JudgeRun.objects.filter(purpose=JudgeRun.Purpose.EXPLAIN).exists()


def test_imported_judges_may_be_first_pass_and_explainer_but_triage_refuses_to_run_an_imported_first_pass(
    project: Project,
) -> None:
    add_samples(project, 2)
    first = create_judge(project, name="elsewhere-nli", kind="imported")
    explainer = create_judge(project, name="elsewhere-gpt", kind="imported")
    settings = update_judging_settings(project, first_pass=first, explainer=explainer)
    assert (settings.first_pass, settings.explainer) == (first, explainer)
    with pytest.raises(JudgeSettingsError) as refused:
        triage.start_triage(project, queue=False)
    assert refused.value.field == "first_pass" and "imported outputs" in str(refused.value)
    assert not JudgeRun.objects.filter(project=project).exists()


# ----------------------------------------------------------------------------- the explainer, checked and scoped


def unset_key_explainer(project: Project, server: LoopbackLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the project's explainer a rubric judge whose API-key variable is not set here."""
    monkeypatch.delenv("FAITHLAB_TEST_NO_KEY", raising=False)
    strong = create_judge(project, name="strong", kind="rubric", base_url=server.base_url, model="test-model",
                          api_key_env="FAITHLAB_TEST_NO_KEY")
    update_judging_settings(project, explainer=strong)


def test_triage_is_refused_before_the_first_pass_when_the_explainer_s_key_variable_is_not_set(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 5)
    with LoopbackLLM(first_pass_script) as fast:
        triage_project(project, fast, None)
        unset_key_explainer(project, fast, monkeypatch)
        with pytest.raises(JudgeSettingsError) as refused:
            triage.start_triage(project, queue=False)
    assert refused.value.field == "api_key_env"
    assert "explainer 'strong'" in str(refused.value) and "FAITHLAB_TEST_NO_KEY" in str(refused.value)
    assert not JudgeRun.objects.exists() and fast.chat_calls == 0


def test_the_triage_command_runs_nothing_when_the_explainer_cannot_start(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 5, batch_name="one")
    with LoopbackLLM(first_pass_script) as fast:
        triage_project(project, fast, None)
        unset_key_explainer(project, fast, monkeypatch)
        with pytest.raises(CommandError) as refused:
            call_command("triage", "--project", project.slug, "--batch", "one")
    message = str(refused.value)
    assert message.startswith("api_key_env: ") and "FAITHLAB_TEST_NO_KEY" in message and "'strong'" in message
    assert not JudgeRun.objects.exists() and not AuditItem.objects.exists() and fast.chat_calls == 0


def first_pass_or_five(body: dict, attempt: int) -> Reply:
    """first_pass_script for s0..s4; every other sample scores 5 (never flagged)."""
    return first_pass_script(body, attempt) if tag_of(user_text(body)) in FIRST_PASS else Reply('{"score": 5}')


def flagged_only_s3(body: dict, attempt: int) -> Reply:
    return Reply(content='{"score": 2}' if tag_of(user_text(body)) == "s3" else '{"score": 5}')


def queue_by_hand(project: Project, *external_ids: str) -> None:
    """Audit items that other runs (an import, an earlier judge) put in the queue."""
    for sample in project.samples.filter(external_id__in=external_ids):
        AuditItem.objects.create(project=project, sample=sample, reason="imported elsewhere")


@pytest.mark.parametrize("batch_name", ["one", None])
def test_the_explainer_judges_only_what_its_first_pass_flagged_not_the_whole_queue(
    project: Project, django_capture_on_commit_callbacks: Any, batch_name: str | None
) -> None:
    add_samples(project, 5, batch_name="one")
    add_samples(project, 2, batch_name="two", first=100)
    queue_by_hand(project, "s1", "s100")  # flagged earlier by others: s1 in batch one, s100 in batch two
    batch = project.batches.get(name=batch_name) if batch_name else None
    with LoopbackLLM(first_pass_or_five) as fast, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        first = triage.start_triage(project, batch=batch, queue=False)
        with django_capture_on_commit_callbacks(execute=False):
            first = runs.execute_run(first.pk)  # the worker's path: done, flags, and starts the explainer
        explain = JudgeRun.objects.get(purpose=JudgeRun.Purpose.EXPLAIN)
        assert (first.flagged, explain.total, explain.batch) == (2, 2, batch)
        explain = runs.execute_run(explain.pk)
    assert {tag_of(user_text(body)) for body in strong.requests} == {"s0", "s3"}
    assert set(explain.judgements.values_list("sample__external_id", flat=True)) == {"s0", "s3"}
    assert AuditItem.objects.filter(project=project).count() == 4  # the others' items stay in the queue


def test_a_later_triage_explains_its_own_flags_from_the_cache_when_already_explained(project: Project) -> None:
    """Two triages in turn, with another first-pass judge the second time: each explainer run judges its own
    first pass's flags. s3, explained by the first, is explained again from the call cache: no call, no cost."""
    add_samples(project, 5)
    with LoopbackLLM(first_pass_script) as fast, LoopbackLLM(flagged_only_s3) as other, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        call_command("triage", "--project", project.slug, stdout=io.StringIO())
        assert strong.chat_calls == 2
        second = create_judge(project, name="other", kind="rubric", base_url=other.base_url, model="test-model",
                              with_reasoning=False, max_retries=0)
        update_judging_settings(project, first_pass=second)
        out = io.StringIO()
        call_command("triage", "--project", project.slug, "--json", stdout=out)
    result = json.loads(out.getvalue())
    assert result["flagged"] == 1
    explain = JudgeRun.objects.get(pk=result["explain"]["run"])
    assert list(explain.judgements.values_list("sample__external_id", flat=True)) == ["s3"]
    assert (explain.total, explain.cached, explain.calls, strong.chat_calls) == (1, 1, 0, 2)
    assert explain.judgements.get().cost == 0.0


def test_the_flagging_filter_agrees_with_is_flagged(project: Project) -> None:
    samples = add_samples(project, 9)
    judge = create_judge(project, name="mixed", kind="rubric", base_url="http://127.0.0.1:9/v1", model="m")
    run = JudgeRun.objects.create(project=project, judge=judge)
    cases = [("ok", 3, None), ("ok", 4, None), ("ok", None, 0.49), ("ok", None, 0.5), ("parse_error", None, None),
             ("error", None, None), ("ok", 1, None), ("ok", None, None), ("ok", 5, 0.1)]
    Judgement.objects.bulk_create(
        Judgement(run=run, sample=sample, status=status, score=score, probability=p)
        for sample, (status, score, p) in zip(samples, cases, strict=True)
    )
    settings = JudgingSettings()
    expected = {j.sample_id for j in Judgement.objects.filter(run=run) if triage.is_flagged(j, settings)}
    found = set(Judgement.objects.filter(run=run).filter(triage.flagging(settings)).values_list("sample_id", flat=True))
    assert found == expected and len(expected) == 3


def test_an_explain_run_names_its_first_pass_and_judges_its_flags_even_after_a_later_first_pass(
    project: Project,
) -> None:
    """The explain run's ``explains`` is its first pass: another first pass that finished after it (another judge,
    other flags) does not change what is explained."""
    add_samples(project, 5)
    with LoopbackLLM(first_pass_script) as fast, LoopbackLLM(flagged_only_s3) as other, LoopbackLLM() as strong:
        triage_project(project, fast, strong)
        earlier = runs.execute_run(triage.start_triage(project, queue=False).pk, follow_up=False)
        later_judge = create_judge(project, name="other", kind="rubric", base_url=other.base_url,
                                   model="test-model", with_reasoning=False, max_retries=0)
        later = runs.start_run(project, later_judge, purpose=JudgeRun.Purpose.FIRST_PASS, queue=False)
        later = runs.execute_run(later.pk, follow_up=False)
        assert (earlier.flagged, later.flagged) == (2, 1)
        explain = triage.start_explanation(earlier, queue=False)
        assert explain is not None and explain.explains == earlier and explain.total == 2
        explain = runs.execute_run(explain.pk)
    assert set(explain.judgements.values_list("sample__external_id", flat=True)) == {"s0", "s3"}
    assert list(earlier.explanations.all()) == [explain]
