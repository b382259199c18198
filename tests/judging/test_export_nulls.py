"""What exports write for absent texts and for display scores: null in JSONL (an empty cell in CSV), and a rubric
score as an integer (only an NLI judge's 1 + 4p is a fraction); the import reads it all back."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Batch, Membership, Project
from judging.models import Audit, AuditItem, Judge, Judgement, JudgeRun
from judging.services.export import export_lines
from judging.services.ingest import import_judgements
from tests.conftest import make_user


@pytest.fixture
def scored(batch: Batch) -> dict[str, Any]:
    """A score-only rubric answer (no reasoning, no error), a parse error (no reasoning), an NLI p, and two audits
    that saw the rubric score and the NLI figure."""
    project = batch.project
    samples = {sample.external_id: sample for sample in batch.samples.all()}
    judge = Judge.objects.create(project=project, name="gpt", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                 model="m", with_reasoning=False)
    run = JudgeRun.objects.create(project=project, judge=judge, status="done", total=2, done=2)
    rubric = Judgement.objects.create(run=run, sample=samples["0"], status="ok", score=1, raw='{"score": 1}')
    Judgement.objects.create(run=run, sample=samples["1"], status="parse_error", raw="one, I think",
                             error="no JSON object in the answer")
    import_judgements(project, [("nli.jsonl", b'{"sample": "2", "judge": "hhem", "p": 0.3}')])
    nli = Judgement.objects.get(run__judge__name="hhem")
    grace = make_user("grace")
    Membership.objects.create(project=project, user=grace, role=Membership.Role.AUDITOR)
    now = timezone.now()
    for judgement in (rubric, nli):
        item = AuditItem.objects.create(project=project, sample=judgement.sample, flagged_by=judgement, reason="low")
        Audit.objects.create(item=item, auditor=grace, judgement=judgement, score=2, agreed=False, served_at=now,
                             answered_at=now, seconds=5.0)
    return {"project": project, "batch": batch}


def text(project: Project, what: str, format: str) -> str:
    return "".join(export_lines(project, what=what, format=format))


@pytest.mark.django_db
def test_absent_reasoning_raw_and_error_are_null_in_jsonl_and_empty_in_csv(scored: dict[str, Any]) -> None:
    project = scored["project"]
    rows = [json.loads(line) for line in text(project, "judgements", "jsonl").splitlines()]
    assert [(row["sample"], row["reasoning"], row["raw"], row["error"]) for row in rows] == [
        ("0", None, '{"score": 1}', None),
        ("1", None, "one, I think", "no JSON object in the answer"),
        ("2", None, None, None),
    ]
    table = list(csv.DictReader(io.StringIO(text(project, "judgements", "csv"), newline="")))
    assert [(row["reasoning"], row["raw"], row["error"]) for row in table] == [
        ("", '{"score": 1}', ""), ("", "one, I think", "no JSON object in the answer"), ("", "", "")]


@pytest.mark.django_db
def test_a_rubric_score_is_an_integer_and_only_an_nli_figure_a_fraction(scored: dict[str, Any]) -> None:
    project = scored["project"]
    judgements = [json.loads(line) for line in text(project, "judgements", "jsonl").splitlines()]
    shown = [(row["sample"], row["display_score"], type(row["display_score"])) for row in judgements]
    assert shown == [("0", 1, int), ("1", None, type(None)), ("2", pytest.approx(2.2), float)]
    audits = [json.loads(line) for line in text(project, "audits", "jsonl").splitlines()]
    seen = [(row["judge"], row["judge_score_seen"], type(row["judge_score_seen"])) for row in audits]
    assert seen == [("gpt", 1, int), ("hhem", pytest.approx(2.2), float)]
    assert '"judge_score_seen": 1,' in text(project, "audits", "jsonl")
    table = list(csv.DictReader(io.StringIO(text(project, "audits", "csv"), newline="")))
    assert [row["judge_score_seen"] for row in table][0] == "1"
    assert [row["display_score"] for row in csv.DictReader(io.StringIO(text(project, "judgements", "csv")))][0] == "1"


@pytest.mark.django_db
def test_the_jsonl_export_imports_into_another_project_and_exports_the_same(scored: dict[str, Any]) -> None:
    project, batch = scored["project"], scored["batch"]
    exported = text(project, "judgements", "jsonl")
    other = Project.objects.create(name="Copy", slug="copy")
    copy_batch = Batch.objects.create(project=other, name=batch.name)
    for sample in batch.samples.select_related("passage"):
        passage, _ = other.passages.get_or_create(external_id=sample.passage.external_id, text=sample.passage.text)
        other.samples.create(passage=passage, batch=copy_batch, external_id=sample.external_id, summary=sample.summary)
    assert import_judgements(other, [("export.jsonl", exported.encode())]).judgements == 3
    assert set(Judgement.objects.filter(run__project=other).values_list("reasoning", flat=True)) == {""}

    said = ("sample", "status", "score", "p", "display_score", "reasoning", "raw", "error")
    again = [json.loads(line) for line in text(other, "judgements", "jsonl").splitlines()]
    before = [json.loads(line) for line in exported.splitlines()]
    assert [{key: row[key] for key in said} for row in again] == [{key: row[key] for key in said} for row in before]
    assert [type(row["display_score"]) for row in again] == [type(row["display_score"]) for row in before]
