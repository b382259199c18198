"""Judge runs against endpoints as they really answer: reasoning models that think before answering, servers that
report no token usage for some calls, answers that cannot be read (served from the cache like any answer, asked
again by a run with ask_again), and runs where every call failed (their waiting counted, their outcome shown as such on pages and in the API)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Project
from judging.judges.rubric import build_request
from judging.models import CallCache, Judge, JudgeRun
from judging.services import overview, runs
from judging.services.judges import create_judge
from tests.annotate.results_scene import tags
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, tag_of
from tests.judging.test_run_accounting import figure_cells

pytestmark = pytest.mark.django_db

THOUGHT_THEN_ANSWER = ('<think>\nThe summary says 2023. Draft: {"reasoning": "wrong year", "score": 2}\n'
                       'No: the source gives no year at all, so it is only unverifiable.\n</think>\n\n'
                       '{"reasoning": "The year is not in the source.", "score": 4}')


def rubric_judge(project: Project, server: LoopbackLLM, **settings: Any) -> Judge:
    values = {"name": "loop", "kind": "rubric", "base_url": server.base_url, "model": "test-model",
              "price_input_per_mtok": 2.0, "price_output_per_mtok": 10.0} | settings
    return create_judge(project, **values)


def run_once(project: Project, judge: Judge) -> JudgeRun:
    return runs.execute_run(runs.start_run(project, judge, queue=False).pk)


def test_a_reasoning_model_s_draft_score_is_not_its_score_and_its_whole_answer_is_kept(project: Project) -> None:
    add_samples(project, 2)
    with LoopbackLLM(lambda body, attempt: Reply(content=THOUGHT_THEN_ANSWER)) as server:
        run = run_once(project, rubric_judge(project, server))
    judgements = list(run.judgements.all())
    assert [(j.status, j.score) for j in judgements] == [("ok", 4), ("ok", 4)]
    assert {j.reasoning for j in judgements} == {"The year is not in the source."}
    assert {j.raw for j in judgements} == {THOUGHT_THEN_ANSWER}


def test_cost_and_tokens_say_they_are_partial_when_some_answers_reported_no_usage(
    project: Project, admin_user: Any
) -> None:
    add_samples(project, 5)

    def script(body: dict[str, Any], attempt: int) -> Reply:
        reported = tag_of(user_text(body)) in ("s0", "s1")  # a server that reports usage for some answers only
        return Reply(prompt_tokens=1000 if reported else None, completion_tokens=200 if reported else None)

    with LoopbackLLM(script) as server:
        run = run_once(project, rubric_judge(project, server))
    figures = overview.run_figures(run)
    assert (figures["answered_calls"], figures["usage_calls"], figures["no_usage_calls"]) == (5, 2, 3)
    assert figures["partial_usage"] is True
    assert figures["cost"] == pytest.approx(2 * (1000 * 2.0 + 200 * 10.0) / 1_000_000)  # $0.008, of two calls

    cells = figure_cells(login(admin_user), run)
    partial = ('<span class="small" data-role="partial-usage">for 2 of 5 calls answered; 3 reported no usage')
    assert cells["cost"].startswith("0.0080 " + partial)
    assert cells["sent_tokens"].startswith("2000 / 400 " + partial)


def test_with_no_usage_reported_at_all_cost_and_tokens_stay_unknown(project: Project, admin_user: Any) -> None:
    add_samples(project, 3)
    with LoopbackLLM(lambda body, attempt: Reply(prompt_tokens=None, completion_tokens=None)) as server:
        run = run_once(project, rubric_judge(project, server))
    assert overview.run_figures(run)["partial_usage"] is False
    cells = figure_cells(login(admin_user), run)
    assert (cells["cost"], cells["sent_tokens"]) == ("—", "— / —")


def test_an_answer_that_could_not_be_read_is_served_again_unless_the_run_asks_again(project: Project) -> None:
    add_samples(project, 3)

    def script(body: dict[str, Any], attempt: int) -> Reply:
        if tag_of(user_text(body)) == "s1" and attempt == 0:
            return Reply(content='{"reasoning": "The output says nine we')  # cut off by max_tokens
        return Reply(content=json.dumps({"reasoning": "checked", "score": 3}))

    with LoopbackLLM(script) as server:
        judge = rubric_judge(project, server)
        first = run_once(project, judge)
        second = run_once(project, judge)
        asked_by_second = server.chat_calls - first.calls
        third = runs.execute_run(runs.start_run(project, judge, queue=False, ask_again=True).pk)
        fourth = run_once(project, judge)
        asked = [tag_of(user_text(body)) for body in server.requests]
    assert (first.scored, first.failed) == (2, 1)
    # The second run is answered wholly from the cache, the unreadable answer too (the same parse error).
    assert asked_by_second == 0
    assert (second.scored, second.failed, second.cached, second.calls) == (2, 1, 3, 0)
    # The third asks only the unreadable one again (the two scores come from the cache) and gets its score.
    assert sorted(asked) == ["s0", "s1", "s1", "s2"]
    assert (third.scored, third.failed, third.cached, third.calls) == (3, 0, 2, 1)
    assert (fourth.scored, fourth.cached, fourth.calls) == (3, 3, 0)
    assert CallCache.objects.count() == 3
    assert not CallCache.objects.filter(raw__contains="nine we").exists()


def test_a_cached_row_that_does_not_parse_is_replaced_when_a_run_asks_again(project: Project) -> None:
    (sample,) = add_samples(project, 1)
    with LoopbackLLM() as server:
        judge = rubric_judge(project, server)
        run = runs.start_run(project, judge, queue=False, ask_again=True)
        # A cached refusal, no score.
        key = build_request(judge, run.rubric.text, sample.summary, sample.passage.text).cache_key
        CallCache.objects.create(key=key, model="test-model", request_mode="json_schema",
                                 raw="I cannot help with that.", input_tokens=10, output_tokens=5)
        run = runs.execute_run(run.pk)
        assert server.chat_calls == 1
    (judgement,) = run.judgements.all()
    assert (judgement.status, judgement.score, judgement.cached) == ("ok", 5, False)
    row = CallCache.objects.get(key=key)  # the row now holds the answer that parsed
    assert row.raw == Reply().content and (row.input_tokens, row.output_tokens) == (120, 30)


def test_a_run_whose_every_call_failed_records_its_waiting_and_is_not_shown_as_plain_done(
    project: Project, admin_user: Any
) -> None:
    add_samples(project, 3)
    with LoopbackLLM(lambda body, attempt: Reply(status=500)) as server:
        run = run_once(project, rubric_judge(project, server, max_retries=1))
    with LoopbackLLM() as healthy:
        healthy_server_run = run_once(project, rubric_judge(project, healthy, name="healthy"))

    # Each failure took two attempts and the backoff between them (0.5 s or more): the run waited that long.
    latencies = [j.latency_seconds for j in run.judgements.all()]
    assert all(latency is not None and latency >= 0.5 for latency in latencies), latencies
    figures = overview.run_figures(run)
    assert figures["errors"] == 3
    assert figures["mean_latency"] == pytest.approx(sum(latencies) / 3)
    admin = login(admin_user)
    cells = figure_cells(admin, run)
    assert cells["mean_latency"].startswith(f"{figures['mean_latency']:.3f} ")
    assert "over 3 calls" in cells["mean_latency"]
    page = admin.get(reverse("judging-run", args=[project.slug, run.pk])).content.decode()
    assert "endpoint errors included" in page

    # Every call failed: the run finished (status done), shown as failing on its page, the runs list and the API.
    assert (run.status, run.all_failed, run.status_label) == ("done", True, "Done: 3 of 3 failed")
    assert (healthy_server_run.all_failed, healthy_server_run.status_label) == (False, "Done")
    failing_badge = 'class="badge warn" data-role="run-status" data-all-failed>Done: 3 of 3 failed<'
    assert failing_badge in page
    runs_list = tags(admin.get(reverse("judging-judges", args=[project.slug])))
    assert {row["data-run"] for row in runs_list.find("div", data_role="run-progress")} == {
        str(run.pk), str(healthy_server_run.pk)}
    html = admin.get(reverse("judging-judges", args=[project.slug])).content.decode()
    failing = html.split(f'id="run-{run.pk}"', 1)[1].split("</div>", 1)[0]
    healthy_row = html.split(f'id="run-{healthy_server_run.pk}"', 1)[1].split("</div>", 1)[0]
    assert failing_badge in failing
    assert 'class="badge ok" data-role="run-status">Done<' in healthy_row
    api = admin.get(f"/api/judge-runs/{run.pk}/").json()
    assert (api["status"], api["all_failed"], api["status_label"]) == ("done", True, "Done: 3 of 3 failed")
    listed = admin.get(f"/api/projects/{project.slug}/judge-runs/").json()["results"]
    assert {entry["id"]: entry["all_failed"] for entry in listed} == {run.pk: True, healthy_server_run.pk: False}
    assert runs.run_summary(run, with_judgements=False)["status_label"] == "Done: 3 of 3 failed"
