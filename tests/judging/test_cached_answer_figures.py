"""What a run spent, the same rule on every surface: an answer from the call cache made no call, so its row has no
latency and no tokens of its own and cost 0 (the earlier call's figures are apart, as ``cached_call_*``), in the
exports, the run's judgements API and the run's page alike. Summing a project's export then gives what its runs cost,
not the first call's tokens once more for every run that reused it; and the run's page says how many answers the
tokens the cache saved come from."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch, Project, Sample
from judging.models import Judge, Judgement, JudgeRun
from judging.services import overview, runs
from judging.services.export import export_lines
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply
from tests.judging.run_factories import add_samples

pytestmark = pytest.mark.django_db

PRICE_IN, PRICE_OUT = 2.0, 10.0  # US$ per million tokens


def priced_judge(project: Project, base_url: str) -> Judge:
    return Judge.objects.create(project=project, name="priced", kind=Judge.Kind.RUBRIC, base_url=base_url,
                                model="test-model", price_input_per_mtok=PRICE_IN, price_output_per_mtok=PRICE_OUT,
                                max_retries=0)


def answered_with_usage(body: dict[str, Any], attempt: int) -> Reply:
    return Reply(content=json.dumps({"reasoning": "checked", "score": 4}), prompt_tokens=1000, completion_tokens=200)


@pytest.fixture
def paid_then_cached(project: Project) -> tuple[JudgeRun, JudgeRun]:
    """Three samples judged twice: the first run pays three calls, the second reuses their answers."""
    add_samples(project, 3)
    with LoopbackLLM(answered_with_usage) as server:
        judge = priced_judge(project, server.base_url)
        first = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
        second = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
        assert server.chat_calls == 3
    assert (first.calls, first.cached, second.calls, second.cached) == (3, 0, 0, 3)
    return first, second


def exported(project: Project, run: JudgeRun | None = None) -> list[dict[str, Any]]:
    return [json.loads(line) for line in export_lines(project, what="judgements", format="jsonl", run=run)]


def test_summing_a_project_s_export_gives_what_its_runs_cost(
    project: Project, paid_then_cached: tuple[JudgeRun, JudgeRun]
) -> None:
    first, second = paid_then_cached
    rows = exported(project)
    assert len(rows) == 6
    assert sum(row["input_tokens"] or 0 for row in rows) == 3000  # three calls, not six
    assert sum(row["output_tokens"] or 0 for row in rows) == 600
    assert sum(row["cost"] for row in rows) == pytest.approx(3 * (1000 * PRICE_IN + 200 * PRICE_OUT) / 1e6)
    paid = {row["sample"]: row for row in rows if row["run"] == first.pk}
    reused = {row["sample"]: row for row in rows if row["run"] == second.pk}
    for sample, row in reused.items():
        assert (row["cached"], row["latency"], row["input_tokens"], row["output_tokens"], row["cost"]) == (
            True, None, None, None, 0.0)
        # The earlier call's figures, apart: the one the first run paid for this sample.
        assert (row["cached_call_latency"], row["cached_call_input_tokens"], row["cached_call_output_tokens"]) == (
            paid[sample]["latency"], 1000, 200)
    for row in paid.values():
        assert row["latency"] > 0 and (row["input_tokens"], row["output_tokens"]) == (1000, 200)
        assert (row["cached_call_latency"], row["cached_call_input_tokens"], row["cached_call_output_tokens"]) == (
            None, None, None)


def test_the_api_rows_follow_the_same_rule_and_add_up_to_the_run_s_figures(
    project: Project, admin_user: Any, paid_then_cached: tuple[JudgeRun, JudgeRun]
) -> None:
    first, second = paid_then_cached
    client = login(admin_user)
    for run in (first, second):
        rows = client.get(f"/api/judge-runs/{run.pk}/judgements/").json()["results"]
        figures = overview.run_figures(run)
        assert sum(row["input_tokens"] or 0 for row in rows) == figures["sent_input_tokens"]
        assert sum(row["output_tokens"] or 0 for row in rows) == figures["sent_output_tokens"]
        assert sum(row["cost"] for row in rows) == pytest.approx(figures["cost"])
        assert sum(row["cached_call_input_tokens"] or 0 for row in rows) == figures["cached_input_tokens"]
    reused = client.get(f"/api/judge-runs/{second.pk}/judgements/").json()["results"]
    assert {(row["latency_seconds"], row["input_tokens"], row["output_tokens"], row["cost"]) for row in reused} == {
        (None, None, None, 0.0)}
    assert {(row["cached_call_input_tokens"], row["cached_call_output_tokens"]) for row in reused} == {(1000, 200)}
    assert all(row["cached_call_latency_seconds"] > 0 for row in reused)


def test_the_run_page_says_how_many_answers_the_saved_tokens_come_from(
    project: Project, admin_user: Any, paid_then_cached: tuple[JudgeRun, JudgeRun]
) -> None:
    _, second = paid_then_cached
    html = login(admin_user).get(reverse("judging-run", args=[project.slug, second.pk])).content.decode()
    saved = html.split('data-figure="cached_tokens"', 1)[1].split("</tr>", 1)[0]
    assert "3000 / 600" in saved and "saved by 3 answers from the cache" in saved
    rows = html.split('data-role="judgements"', 1)[1].split("<tr data-judgement=")[1:]
    assert len(rows) == 3
    for row in rows:
        latency = row.split('data-role="latency">', 1)[1].split("</td>", 1)[0]
        tokens = row.split('data-role="tokens">', 1)[1].split("</td>", 1)[0]
        assert latency.startswith("—") and 'data-role="cached-call-latency"' in latency
        assert tokens.startswith("— / —") and "(cached call: 1000 / 200)" in tokens


def test_answers_from_the_cache_without_usage_are_named_apart(
    project: Project, batch: Batch, admin_user: Any
) -> None:
    s0, s1, _ = batch.samples.order_by("position")
    judge = Judge.objects.create(project=project, name="local", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                 model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=2, done=2)
    Judgement.objects.create(run=run, sample=s0, status="ok", score=5, input_tokens=800, output_tokens=90, cost=0.0,
                             cached=True, latency_seconds=1.5)
    Judgement.objects.create(run=run, sample=s1, status="ok", score=4, cost=0.0, cached=True)  # a local server
    figures = overview.run_figures(run)
    assert (figures["cached"], figures["cached_usage"], figures["cached_no_usage"]) == (2, 1, 1)
    html = login(admin_user).get(reverse("judging-run", args=[project.slug, run.pk])).content.decode()
    saved = html.split('data-figure="cached_tokens"', 1)[1].split("</tr>", 1)[0]
    assert "800 / 90" in saved
    assert "saved by 1 answer from the cache; 1 more came without token usage" in saved


def test_a_failed_call_serving_an_identical_request_counts_its_latency_once(project: Project) -> None:
    samples = add_samples(project, 2)
    # s1 asks exactly what s0 asks: one call, which fails, answers both.
    Sample.objects.filter(pk=samples[1].pk).update(summary=samples[0].summary, passage=samples[0].passage)
    with LoopbackLLM(lambda body, attempt: Reply(status=500)) as server:
        judge = priced_judge(project, server.base_url)
        run = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
        assert server.chat_calls >= 1
    made, served = run.judgements.order_by("attempts").reverse()
    assert (made.status, served.status, served.cached, served.attempts) == ("error", "error", False, 0)
    assert made.latency_seconds is not None and served.latency_seconds is None
    assert overview.run_figures(run)["latency_calls"] == 1
