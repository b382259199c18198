"""A full export imports back when a judge ran twice: lines are grouped into runs by judge and exported run.

Files without ``run`` (written by hand, or before exports carried it) still import as one run per judge."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Batch, Project
from judging.models import Judge, Judgement, JudgeRun
from judging.services.ingest import JudgementImportFailed, import_judgements
from judging.services.runs import execute_run, latest_judgements, start_run
from tests.judging.llm_server import LoopbackLLM, Reply, user_text

# Fields that say how the judge was set up where it ran: an import makes an imported judge of its own. And the
# sample's database id, which is another project's there.
SETUP = ("kind", "mode", "rubric_version", "sample_id")


def scoring_script(body: dict[str, Any], attempt: int) -> Reply:
    """Scores by what the output says; the bridge emoji output gets prose (a parse error)."""
    text = user_text(body)
    if "🌉" in text:
        return Reply(content="Hard to say, honestly.")
    score = 2 if "nine weeks" in text else 5
    return Reply(content=json.dumps({"reasoning": f"it says what it says ({score})", "score": score}))


@pytest.fixture
def twice_judged(batch: Batch) -> Project:
    """A rubric judge run twice over the three samples (the second run answered from the call cache), and an
    imported NLI-style judge with one run."""
    project = batch.project
    with LoopbackLLM(script=scoring_script) as server:
        judge = Judge.objects.create(project=project, name="local-llm", kind=Judge.Kind.RUBRIC,
                                     base_url=server.base_url, model="test-model", max_retries=0,
                                     price_input_per_mtok=1.0, price_output_per_mtok=2.0)
        for _ in range(2):
            run = start_run(project, judge, scope="all", queue=False)
            assert execute_run(run.pk).status == "done"
        assert server.chat_calls == 3  # the second run made no call
    import_judgements(project, [("nli.jsonl", b'{"sample": "1", "judge": "hhem", "p": 0.75, "latency": 0.01}\n')])
    return project


def copy_project(batch: Batch, slug: str) -> Project:
    """A fresh project holding the same samples (external ids and texts), nothing judged."""
    other = Project.objects.create(name=slug, slug=slug)
    copy_batch = Batch.objects.create(project=other, name=batch.name)
    for sample in batch.samples.select_related("passage").order_by("position"):
        passage, _ = other.passages.get_or_create(external_id=sample.passage.external_id, text=sample.passage.text)
        other.samples.create(passage=passage, batch=copy_batch, external_id=sample.external_id,
                             summary=sample.summary, position=sample.position)
    return other


def export(slug: str, out: Path) -> list[dict[str, Any]]:
    call_command("export_judgements", "--project", slug, "--what", "judgements", "--format", "jsonl",
                 "--out", str(out), stdout=StringIO())
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def comparable(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with the run id replaced by the run's place among the export's runs, and the judge's setup left out."""
    order = {run: place for place, run in enumerate(dict.fromkeys(row["run"] for row in rows))}
    return [{**{key: value for key, value in row.items() if key not in SETUP}, "run": order[row["run"]]}
            for row in rows]


@pytest.mark.django_db
def test_a_full_export_of_a_judge_that_ran_twice_imports_back_run_by_run(
    twice_judged: Project, batch: Batch, tmp_path: Path
) -> None:
    exported = export(twice_judged.slug, tmp_path / "first.jsonl")
    assert len(exported) == 3 + 3 + 1
    assert len({row["run"] for row in exported}) == 3
    assert sum(row["cached"] for row in exported) == 3  # the second run's three answers

    fresh = copy_project(batch, "fresh")
    printed = StringIO()
    call_command("import_judgements", str(tmp_path / "first.jsonl"), "--project", "fresh", "--json", stdout=printed)
    report = json.loads(printed.getvalue())
    assert report["judgements"] == 7
    assert [(entry["judge"], entry["items"], entry["judge_created"]) for entry in report["runs"]] == [
        ("local-llm", 3, True), ("local-llm", 3, False), ("hhem", 1, True)]

    # The same judgements per run: status, score and reasoning of each sample, run by run, oldest first.
    def per_run(project: Project) -> list[tuple[str, list[tuple[str, str, int | None, str]]]]:
        runs = JudgeRun.objects.filter(project=project).select_related("judge").order_by("created_at", "id")
        return [(run.judge.name, [(j.sample.external_id, j.status, j.score, j.reasoning)
                                  for j in run.judgements.select_related("sample").order_by("sample__position")])
                for run in runs]

    assert per_run(fresh) == per_run(twice_judged)
    assert Judge.objects.get(project=fresh, name="local-llm").runs.count() == 2
    # The latest judgement of each sample is the second run's, here as there.
    latest_here = latest_judgements(fresh)[Judge.objects.get(project=fresh, name="local-llm").pk]
    latest_there = latest_judgements(twice_judged)[Judge.objects.get(project=twice_judged, name="local-llm").pk]
    assert sorted((j.sample.external_id, j.score, j.cached) for j in latest_here.values()) == sorted(
        (j.sample.external_id, j.score, j.cached) for j in latest_there.values()) == [
        ("0", 2, True), ("1", 5, True), ("2", None, True)]

    again = export("fresh", tmp_path / "again.jsonl")
    assert comparable(again) == comparable(exported)
    assert {row["kind"] for row in again} == {"imported"}


@pytest.mark.django_db
def test_a_file_without_runs_is_one_run_per_judge_and_refuses_a_sample_twice(batch: Batch) -> None:
    lines = b'{"sample": "0", "judge": "j", "score": 3}\n{"sample": "1", "judge": "j", "score": 4}\n'
    report = import_judgements(batch.project, [("old.jsonl", lines)])
    assert [(imported.run.judge.name, imported.run.total) for imported in report.runs] == [("j", 2)]

    twice = b'{"sample": "0", "judge": "k", "score": 3}\n{"sample": "0", "judge": "k", "score": 4}\n'
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(batch.project, [("twice.jsonl", twice)])
    assert caught.value.messages == [
        "twice.jsonl: line 2: judge 'k' already has a judgement of this sample on line 1 of twice.jsonl"]

    same_run = b'{"sample": "0", "judge": "k", "score": 3, "run": 7}\n{"sample": "0", "judge": "k", "score": 4, "run": 7}\n'
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(batch.project, [("same.jsonl", same_run)])
    assert caught.value.messages == [
        "same.jsonl: line 2: judge 'k' already has a judgement of this sample in run '7' on line 1 of same.jsonl"]
    assert not Judge.objects.filter(name="k").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(("value", "message"), [
    (True, "field 'run' must be a run id (a whole number) or a run name, got True"),
    (-3, "field 'run' must be a run id (a whole number) or a run name, got -3"),
    (2.5, "field 'run' must be a run id (a whole number) or a run name, got 2.5"),
    ("", "field 'run' must be a run id or a name of 1 to 100 characters, got ''"),
])
def test_a_bad_run_is_named_with_its_line_and_nothing_is_written(batch: Batch, value: Any, message: str) -> None:
    line = json.dumps({"sample": "0", "judge": "j", "score": 3, "run": value}).encode()
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(batch.project, [("bad.jsonl", line)])
    assert caught.value.messages == [f"bad.jsonl: line 1: {message}"]
    assert not Judgement.objects.exists()


@pytest.mark.django_db
def test_cached_must_be_true_or_false(batch: Batch) -> None:
    line = b'{"sample": "0", "judge": "j", "score": 3, "cached": "yes"}'
    with pytest.raises(JudgementImportFailed, match="line 1: field 'cached' must be true or false, got 'yes'"):
        import_judgements(batch.project, [("bad.jsonl", line)])
