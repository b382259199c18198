"""A call sent while its judge had no prices has an unknown cost, null and never 0, on every surface that shows a
judgement's cost: the judgements API, the exports (JSONL and CSV), the run's page, the run's totals, and the cost
table of a synthetic set (its page, its API and `judge_tables`). Worked out by hand for small cases.

The rule (Judgement.cost_unpriced), read from what is stored: a call this run sent (not from the call cache) that
reported its tokens, some above 0, with cost null (how such a call is stored now, Judge.cost_of; one stored with
cost 0 before prices could be blank was made null by migration 0010: tests/judging/test_judge_prices.py) has no
known cost. A cost of 0 is a free judge's (its prices 0), a true 0; so is an answer from the call cache's; an
imported judgement's cost is whatever the file gave, 0 included."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Judge, Judgement, JudgeRun, SyntheticItem
from judging.services import runs
from judging.services.export import export_lines
from judging.services.runs.figures import UNPRICED
from judging.tables import cost_table
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply
from tests.judging.run_factories import add_samples
from tests.judging.synthetic_scene import add_outputs
from tests.judging.test_run_accounting import figure_cells
from tests.judging.test_synthetic_service import judge_set

pytestmark = pytest.mark.django_db


def with_usage(body: dict[str, Any], attempt: int) -> Reply:
    return Reply(content=json.dumps({"reasoning": "checked", "score": 4}), prompt_tokens=1000, completion_tokens=200)


def api_costs(client: Any, run: JudgeRun) -> list[float | None]:
    return [row["cost"] for row in client.get(f"/api/judge-runs/{run.pk}/judgements/").json()["results"]]


def jsonl_costs(project: Project, run: JudgeRun) -> list[float | None]:
    return [json.loads(line)["cost"] for line in export_lines(project, what="judgements", format="jsonl", run=run)]


def csv_costs(project: Project, run: JudgeRun) -> list[str]:
    text = "".join(export_lines(project, what="judgements", format="csv", run=run))
    return [row["cost"] for row in csv.DictReader(io.StringIO(text))]


def page_cost_cells(client: Any, run: JudgeRun) -> list[str]:
    html = client.get(reverse("judging-run", args=[run.project.slug, run.pk])).content.decode()
    return [row.split('data-role="cost">', 1)[1].split("</td>", 1)[0] for row in html.split("<tr data-judgement=")[1:]]


UNPRICED_CELL = ('— <span class="muted small" data-role="unpriced" title="Not known: the judge had no prices when '
                 'this call was sent">no prices</span>')


def test_calls_sent_while_the_judge_had_no_prices_cost_null_everywhere_and_answers_from_the_cache_0(
    project: Project, admin_user: Any
) -> None:
    # Two samples, each answered with 1000 tokens in and 200 out by a judge without prices; a second run answers
    # both from the call cache.
    add_samples(project, 2)
    with LoopbackLLM(with_usage) as server:
        judge = Judge.objects.create(project=project, name="free", kind=Judge.Kind.RUBRIC, base_url=server.base_url,
                                     model="test-model", max_retries=0)  # prices: not known, the default
        sent = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
        again = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
        assert server.chat_calls == 2
    # Stored as not known from now on; the tokens are kept.
    assert sorted(sent.judgements.values_list("input_tokens", "output_tokens", "cost")) == [(1000, 200, None)] * 2
    assert list(again.judgements.values_list("cached", "cost")) == [(True, 0.0)] * 2

    client = login(admin_user)
    assert api_costs(client, sent) == [None, None]
    assert api_costs(client, again) == [0.0, 0.0]  # the run paid nothing: a true 0 (since 295353f)
    assert jsonl_costs(project, sent) == [None, None]
    assert jsonl_costs(project, again) == [0.0, 0.0]
    assert csv_costs(project, sent) == ["", ""]
    assert csv_costs(project, again) == ["0.0", "0.0"]
    assert page_cost_cells(client, sent) == [UNPRICED_CELL] * 2
    assert page_cost_cells(client, again) == ["0.00000"] * 2
    # The run's totals say the same.
    summary = client.get(f"/api/judge-runs/{sent.pk}/").json()["summary"]
    assert (summary["cost"], summary["reasons"]) == (None, {"cost": UNPRICED})
    assert client.get(f"/api/judge-runs/{again.pk}/").json()["summary"]["cost"] == 0.0


def test_rows_with_no_known_cost_read_as_unknown_a_true_0_stays_0_and_an_imported_0_stays_0(
    project: Project, batch: Batch, admin_user: Any
) -> None:
    s0, s1, s2 = batch.samples.order_by("position")
    judge = Judge.objects.create(project=project, name="free", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                 model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=3, done=3)
    # Tokens with no price (not known; a row stored with cost 0 before is null since migration 0010); no usage (not
    # known either); 0 tokens (a true 0).
    Judgement.objects.create(run=run, sample=s0, status="ok", score=4, input_tokens=1000, output_tokens=200, cost=None,
                             attempts=1)
    Judgement.objects.create(run=run, sample=s1, status="ok", score=4, cost=None, attempts=1)
    Judgement.objects.create(run=run, sample=s2, status="ok", score=4, input_tokens=0, output_tokens=0, cost=0.0,
                             attempts=1)
    client = login(admin_user)
    assert api_costs(client, run) == [None, None, 0.0]
    assert jsonl_costs(project, run) == [None, None, 0.0]
    assert csv_costs(project, run) == ["", "", "0.0"]
    assert page_cost_cells(client, run) == [UNPRICED_CELL, "—", "0.00000"]

    # An imported judgement's cost is what the file gave: 0 is 0, null is null, whatever the tokens.
    imported_judge = Judge.objects.create(project=project, name="elsewhere", kind=Judge.Kind.IMPORTED)
    imported = JudgeRun.objects.create(project=project, judge=imported_judge, scope=JudgeRun.Scope.IMPORTED,
                                       status=JudgeRun.Status.DONE, total=2, done=2)
    Judgement.objects.create(run=imported, sample=s0, status="ok", score=4, input_tokens=500, output_tokens=100,
                             cost=0.0)
    Judgement.objects.create(run=imported, sample=s1, status="ok", score=4, input_tokens=500, output_tokens=100,
                             cost=None)
    assert api_costs(client, imported) == [0.0, None]
    assert jsonl_costs(project, imported) == [0.0, None]
    assert csv_costs(project, imported) == ["0.0", ""]
    assert client.get(f"/api/judge-runs/{imported.pk}/").json()["summary"]["cost"] == 0.0


def test_one_call_without_a_price_makes_the_run_s_cost_unknown_and_says_how_many(
    project: Project, batch: Batch, admin_user: Any
) -> None:
    # Prices set mid-run: s0 was priced ($0.004 = 1000 x $2/M + 200 x $10/M); s1 was sent before the prices were
    # set (500/100 tokens: cost null, as migration 0010 left a 0 stored by an older release); s2 reported no usage.
    s0, s1, s2 = batch.samples.order_by("position")
    judge = Judge.objects.create(project=project, name="late", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                 model="m", price_input_per_mtok=2.0, price_output_per_mtok=10.0)
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=3, done=3)
    Judgement.objects.create(run=run, sample=s0, status="ok", score=4, input_tokens=1000, output_tokens=200,
                             cost=0.004, attempts=1)
    Judgement.objects.create(run=run, sample=s1, status="ok", score=4, input_tokens=500, output_tokens=100, cost=None,
                             attempts=1)
    Judgement.objects.create(run=run, sample=s2, status="ok", score=4, cost=None, attempts=1)
    client = login(admin_user)
    assert api_costs(client, run) == [0.004, None, None]
    summary = client.get(f"/api/judge-runs/{run.pk}/").json()["summary"]
    # Not $0.004: that is s0's alone and would read as the run's cost.
    assert (summary["input_tokens"], summary["output_tokens"], summary["cost"]) == (1500, 300, None)
    assert summary["reasons"] == {"cost": (
        "1 of the 2 calls sent that reported their tokens went while the judge had no prices (US$ per million "
        "tokens, set on the judges page), so their cost, and the run's, is not known (a total of the others would "
        "read as the run's); the tokens are.")}
    assert figure_cells(client, run)["cost"] == (
        '— <span class="small" data-role="unpriced">not known: 1 of the 2 calls that reported tokens were sent '
        'while the judge had no prices</span>')


def test_the_cost_table_leaves_unknown_prices_out_of_its_mean_and_says_of_how_many_calls(
    project: Project, admin_user: Any
) -> None:
    synthetic_set = judge_set(project, add_outputs(project))
    items = {(item.sample.external_id, item.type, item.percent): item
             for item in SyntheticItem.objects.filter(synthetic_set=synthetic_set).select_related("sample")}
    late = Judge.objects.create(project=project, name="late", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                model="m")
    free = Judge.objects.create(project=project, name="free", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                model="m", with_reasoning=False)
    late_run = JudgeRun.objects.create(project=project, judge=late, scope="synthetic", synthetic_set=synthetic_set,
                                       status="done")
    rows = {  # key: (input tokens, output tokens, cost, cached)
        ("g1", "gold", 0): (1000, 200, None, False),       # sent without prices, stored as now: not known
        ("g2", "gold", 0): (1000, 200, None, False),       # the same (stored as 0 before migration 0010): not known
        ("g1", "intrinsic", 20): (1000, 200, 0.03, False),  # priced
        ("g1", "intrinsic", 40): (None, None, None, False),  # no usage reported
        ("g1", "intrinsic", 60): (1000, 200, 0.0, True),     # from the call cache: counted apart
    }
    for key, (tokens_in, tokens_out, cost, cached) in rows.items():
        Judgement.objects.create(run=late_run, synthetic_item=items[key], status="ok", score=3, latency_seconds=1.0,
                                 input_tokens=tokens_in, output_tokens=tokens_out, cost=cost, cached=cached)
    free_run = JudgeRun.objects.create(project=project, judge=free, scope="synthetic", synthetic_set=synthetic_set,
                                       status="done")
    for key in (("g1", "gold", 0), ("g2", "gold", 0)):
        Judgement.objects.create(run=free_run, synthetic_item=items[key], status="ok", score=5, latency_seconds=1.0,
                                 input_tokens=800, output_tokens=100, cost=None)

    client = login(admin_user)
    tables = client.get(f"/api/projects/{project.slug}/synthetic-sets/{synthetic_set.pk}/tables/").json()
    cost = {row["judge"]: row for row in tables["cost"]["rows"]}
    # late: four calls sent and answered; the mean price is of the one priced call ($0.03), not (0 + 0.03) / 2.
    assert {name: cost["late"][name] for name in ("calls", "cached", "cost", "cost_calls", "unpriced")} == {
        "calls": 4, "cached": 1, "cost": pytest.approx(0.03), "cost_calls": 1, "unpriced": 2}
    # free: no call priced, so no mean price at all, rather than $0.
    assert {name: cost["free"][name] for name in ("calls", "cost", "cost_calls", "unpriced")} == {
        "calls": 2, "cost": None, "cost_calls": 0, "unpriced": 2}

    html = client.get(reverse("judging-synthetic-set", args=[project.slug, synthetic_set.pk])).content.decode()
    section = html.split('data-role="cost-table"', 1)[1]
    late_cell = section.split('<tr data-judge="late">', 1)[1].split('data-column="cost">', 1)[1].split("</td>", 1)[0]
    free_cell = section.split('<tr data-judge="free">', 1)[1].split('data-column="cost">', 1)[1].split("</td>", 1)[0]
    assert late_cell == ('0.03000 <span class="small" data-role="cost-calls">over 1 of 4 calls; 2 sent while the '
                         'judge had no prices, not known</span>')
    assert free_cell == ('— <span class="small" data-role="unpriced">not known: the judge had no prices when its '
                         'calls were sent</span>')

    out = io.StringIO()
    call_command("judge_tables", "--project", project.slug, "--set", synthetic_set.name, stdout=out)
    lines = out.getvalue().splitlines()
    assert ("late (reasoning): price of 2 of 4 calls not known (the judge had no prices when they were sent); the "
            "mean price is over 1 call") in lines
    assert ("free (score only): price of 2 of 2 calls not known (the judge had no prices when they were sent); no "
            "mean price") in lines


def test_the_pure_cost_table_never_counts_an_unknown_price_as_0() -> None:
    rows = [
        {"judge": "j", "mode": "reasoning", "score": 5, "cost": 0.02},
        {"judge": "j", "mode": "reasoning", "score": 4, "cost": 0.0, "unpriced": True},  # what the row says is moot
        {"judge": "j", "mode": "reasoning", "score": 3, "cost": None},
        {"judge": "j", "mode": "reasoning", "score": 2, "cost": 0.04},
    ]
    (row,) = cost_table(rows)["rows"]
    assert (row["calls"], row["cost"], row["cost_calls"], row["unpriced"]) == (4, pytest.approx(0.03), 2, 1)
