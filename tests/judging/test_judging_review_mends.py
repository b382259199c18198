"""Small mends from a review of the judging app, each checked where a person or a script meets it:

- a run over a synthetic set has no judgements of samples to export: the API and the command refuse it by name
  (its figures are the set's tables) rather than answering an empty file, and the judges page does not offer it;
- a judge named after its mode ("fake-2 (score only)", as a judge made from a model is named) is printed once,
  not "fake-2 (score only) (score only)";
- a run cancelled (or failed) before any judgement says so in its summary's reasons, not "Nothing is judged yet.";
- US$ figures leave the API and the JSON outputs rounded (judging.costs), without float noise such as
  0.30000000000000004."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotate.models import Project
from judging.charts import sensitivity_chart
from judging.costs import COST_DECIMALS, us_dollars
from judging.models import Judge, Judgement, JudgeRun, SyntheticItem, SyntheticSet
from judging.services import runs
from judging.services.export import export_lines
from judging.services.synthetic import paper_tables
from judging.views.exports import export_context
from tests.conftest import login
from tests.judging.run_factories import add_samples
from tests.judging.synthetic_scene import add_outputs
from tests.judging.test_synthetic_service import judge_set

pytestmark = pytest.mark.django_db

NOISY = 0.1 + 0.2  # 0.30000000000000004


def synthetic_run(project: Project, judge: Judge) -> tuple[SyntheticSet, JudgeRun]:
    synthetic_set = judge_set(project, add_outputs(project))
    run = JudgeRun.objects.create(project=project, judge=judge, scope="synthetic", synthetic_set=synthetic_set,
                                  status="done")
    for item in SyntheticItem.objects.filter(synthetic_set=synthetic_set):
        Judgement.objects.create(run=run, synthetic_item=item, status="ok", score=4, latency_seconds=1.0,
                                 input_tokens=1000, output_tokens=200, cost=None)
    return synthetic_set, run


def rubric(project: Project, name: str = "fake-2 (score only)") -> Judge:
    return Judge.objects.create(project=project, name=name, kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                model="fake-2", with_reasoning=False)


def test_a_synthetic_set_s_run_is_refused_by_the_export_api_and_command_and_not_offered_on_the_page(
    project: Project, admin_user: Any, tmp_path: Any
) -> None:
    judge = rubric(project)
    synthetic_set, run = synthetic_run(project, judge)
    (sample,) = add_samples(project, 1)
    sample_run = JudgeRun.objects.create(project=project, judge=judge, status="done", total=1, done=1, scored=1)
    Judgement.objects.create(run=sample_run, sample=sample, status="ok", score=4)

    client = login(admin_user)
    answer = client.get(f"/api/projects/{project.slug}/judgements/export/?format=jsonl&run={run.pk}")
    assert answer.status_code == 400
    (message,) = answer.json()["run"]
    assert f"judge run {run.pk} judged the synthetic set {synthetic_set.name!r}" in message
    assert f"/api/projects/{project.slug}/synthetic-sets/{synthetic_set.pk}/tables/" in message
    page = client.get(f"/projects/{project.slug}/judges/export/judgements/?format=csv&run={run.pk}")
    assert page.status_code == 400 and "Not exported: run: " in page.content.decode()

    out = tmp_path / "judgements.jsonl"
    with pytest.raises(CommandError, match=r"^--run: judge run \d+ judged the synthetic set"):
        call_command("export_judgements", "--project", project.slug, "--run", str(run.pk), "--out", str(out),
                     stdout=io.StringIO())
    assert not out.exists()

    assert list(export_context(project)["export_runs"]) == [sample_run]
    # A run over samples still exports, and so does every run's judgements (a synthetic set's are not samples').
    lines = client.get(f"/api/projects/{project.slug}/judgements/export/?format=jsonl&run={sample_run.pk}")
    assert lines.status_code == 200 and len(b"".join(lines.streaming_content).splitlines()) == 1


def test_a_judge_named_after_its_mode_is_named_once_by_judge_tables_and_the_chart(
    project: Project, admin_user: Any
) -> None:
    synthetic_set, _run = synthetic_run(project, rubric(project))
    out = io.StringIO()
    call_command("judge_tables", "--project", project.slug, "--set", synthetic_set.name, stdout=out)
    text = out.getvalue()
    assert "(score only) (score only)" not in text
    assert "fake-2 (score only): price of 7 of 7 calls not known" in text
    labels = [line["label"] for line in sensitivity_chart(paper_tables(synthetic_set)["sensitivity"])["lines"]]
    assert labels == ["fake-2 (score only) · intrinsic"]


def test_a_run_cancelled_before_any_judgement_says_so_in_its_reasons(project: Project, admin_user: Any) -> None:
    judge = rubric(project, "r")
    cancelled = JudgeRun.objects.create(project=project, judge=judge, total=3, status=JudgeRun.Status.FAILED,
                                        cancelled_at=timezone.now(), cancelled_by=admin_user)
    failed = JudgeRun.objects.create(project=project, judge=judge, total=3, status=JudgeRun.Status.FAILED,
                                     error="no endpoint")
    queued = JudgeRun.objects.create(project=project, judge=judge, total=3)
    client = login(admin_user)
    reasons = {run.pk: client.get(f"/api/judge-runs/{run.pk}/").json()["summary"]["reasons"]
               for run in (cancelled, failed, queued)}
    assert reasons[cancelled.pk]["cost"] == "The run was cancelled before any judgement."
    assert reasons[cancelled.pk]["input_tokens"] == "The run was cancelled before any judgement."
    assert reasons[failed.pk]["cost"] == "The run failed before any judgement."
    assert reasons[queued.pk]["cost"] == "Nothing is judged yet."
    assert runs.run_summary(cancelled, with_judgements=False)["reasons"] == reasons[cancelled.pk]


def test_us_dollar_figures_leave_the_api_and_the_json_outputs_without_float_noise(
    project: Project, admin_user: Any, tmp_path: Any
) -> None:
    judge = Judge.objects.create(project=project, name="priced", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m", price_input_per_mtok=1.0, price_output_per_mtok=2.0)
    samples = add_samples(project, 2)
    run = JudgeRun.objects.create(project=project, judge=judge, status="done", total=2, done=2, scored=2)
    for sample, cost in zip(samples, (0.1, 0.2), strict=True):  # summed in either order: 0.30000000000000004
        Judgement.objects.create(run=run, sample=sample, status="ok", score=4, latency_seconds=1.0,
                                 input_tokens=1000, output_tokens=200, cost=cost)
    noisy_run = JudgeRun.objects.create(project=project, judge=judge, status="done", total=1, done=1, scored=1)
    Judgement.objects.create(run=noisy_run, sample=samples[0], status="ok", score=4, latency_seconds=1.0,
                             input_tokens=1000, output_tokens=200, cost=NOISY)
    client = login(admin_user)

    assert client.get(f"/api/judge-runs/{run.pk}/").json()["summary"]["cost"] == 0.3
    assert runs.run_summary(run)["cost"] == 0.3  # what `judge --json` prints
    rows = client.get(f"/api/judge-runs/{noisy_run.pk}/judgements/").json()["results"]
    assert [row["cost"] for row in rows] == [0.3]
    exported = export_lines(project, what="judgements", format="jsonl", run=noisy_run)
    assert [json.loads(line)["cost"] for line in exported] == [0.3]

    synthetic_set = judge_set(project, add_outputs(project))
    table_run = JudgeRun.objects.create(project=project, judge=judge, scope="synthetic", synthetic_set=synthetic_set,
                                        status="done")
    for item, cost in zip(SyntheticItem.objects.filter(synthetic_set=synthetic_set)[:2], (0.1, 0.2), strict=True):
        Judgement.objects.create(run=table_run, synthetic_item=item, status="ok", score=4, latency_seconds=1.0,
                                 input_tokens=1000, output_tokens=200, cost=cost)
    assert paper_tables(synthetic_set)["cost"]["rows"][0]["cost"] == 0.15000000000000002  # the noise, as computed
    tables = client.get(f"/api/projects/{project.slug}/synthetic-sets/{synthetic_set.pk}/tables/").json()
    assert tables["cost"]["rows"][0]["cost"] == 0.15
    printed = io.StringIO()
    call_command("judge_tables", "--project", project.slug, "--set", synthetic_set.name, "--json", stdout=printed)
    assert json.loads(printed.getvalue())["cost"]["rows"][0]["cost"] == 0.15

    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["components"]["schemas"]
    assert f"Rounded to {COST_DECIMALS} decimal places." in schema["RunSummary"]["properties"]["cost"]["description"]
    assert f"Rounded to {COST_DECIMALS} decimal places." in schema["CostRow"]["properties"]["cost"]["description"]


def test_rounding_keeps_a_cheap_call_s_price_and_an_unknown_one_null() -> None:
    assert us_dollars(100 * 0.01 / 1_000_000) == 0.000001
    assert us_dollars(None) is None
    assert us_dollars(0.0) == 0.0
