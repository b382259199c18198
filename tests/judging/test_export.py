"""Exporting judgements and audits: JSONL and CSV carry every field, an export imports again, and no API key leaks."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from annotate.models import Batch, Membership, Project
from judging.models import Audit, AuditItem, Judge, Judgement, JudgeRun, PromptVersion
from judging.services.export import AUDIT_FIELDS, JUDGEMENT_FIELDS, export_lines
from judging.services.ingest import import_judgements
from tests.conftest import make_user

SECRET = "sk-test-0123456789abcdefSECRET"


@pytest.fixture
def judged(batch: Batch) -> dict[str, Any]:
    """A rubric judge (key from OPENAI_API_KEY) with one run of three judgements, and an NLI-style imported judge."""
    project = batch.project
    samples = {s.external_id: s for s in batch.samples.all()}
    rubric = PromptVersion.objects.create(project=project, kind="rubric", number=2, text="rubric v2")
    judge = Judge.objects.create(
        project=project, name="gpt-test", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1", model="m",
        api_key_env="OPENAI_API_KEY", with_reasoning=True,
    )
    run = JudgeRun.objects.create(project=project, judge=judge, rubric=rubric, status="done", total=3, done=3)
    ok = Judgement.objects.create(
        run=run, sample=samples["0"], status="ok", score=2, prompt_version=rubric,
        reasoning='The output says "nine weeks", the source "eight weeks".\nAlso, "national government".',
        raw='{"reasoning": "...", "score": 2}', latency_seconds=4.25, input_tokens=700, output_tokens=80,
        cost=0.0042, cached=True, sentence_scores=[2, 5],
    )
    Judgement.objects.create(run=run, sample=samples["1"], status="parse_error", raw="Score: four, probably",
                             error="no JSON object in the answer", prompt_version=rubric)
    Judgement.objects.create(run=run, sample=samples["2"], status="error", error="HTTP 500 after 5 attempts",
                             prompt_version=rubric)
    import_judgements(project, [("nli.jsonl", b'{"sample": "0", "judge": "hhem", "p": 0.25, "latency": 0.007}')])
    return {"project": project, "run": run, "ok": ok, "samples": samples}


def parse_jsonl(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.mark.django_db
def test_jsonl_has_every_field_of_every_judgement(judged: dict[str, Any]) -> None:
    rows = parse_jsonl("".join(export_lines(judged["project"], what="judgements", format="jsonl")))
    assert [tuple(row) for row in rows] == [JUDGEMENT_FIELDS] * 4
    first = rows[0]
    # Answered from the cache: no call of this run's (null latency and tokens, cost 0), the earlier call's apart.
    assert first == {
        "sample": "0", "batch": "batch-1", "judge": "gpt-test", "kind": "rubric", "mode": "reasoning",
        "run": judged["run"].pk, "rubric_version": 2, "status": "ok", "score": 2, "p": None, "display_score": 2,
        "reasoning": 'The output says "nine weeks", the source "eight weeks".\nAlso, "national government".',
        "raw": '{"reasoning": "...", "score": 2}', "error": None, "latency": None, "input_tokens": None,
        "output_tokens": None, "cost": 0.0, "cached": True, "sentence_scores": [2, 5],
        "sample_id": judged["samples"]["0"].pk, "sample_external_id": "0", "cached_call_latency": 4.25,
        "cached_call_input_tokens": 700, "cached_call_output_tokens": 80,
    }
    assert [(r["status"], r["score"], r["error"]) for r in rows[1:3]] == [
        ("parse_error", None, "no JSON object in the answer"), ("error", None, "HTTP 500 after 5 attempts")]
    nli = rows[3]
    assert (nli["judge"], nli["kind"], nli["p"], nli["display_score"], nli["score"]) == ("hhem", "imported", 0.25, 2.0, None)
    one_run = parse_jsonl("".join(export_lines(judged["project"], what="judgements", format="jsonl", run=judged["run"])))
    assert [row["sample"] for row in one_run] == ["0", "1", "2"]


@pytest.mark.django_db
def test_csv_gives_the_same_values_as_text(judged: dict[str, Any]) -> None:
    text = "".join(export_lines(judged["project"], what="judgements", format="csv"))
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert tuple(rows[0]) == JUDGEMENT_FIELDS and len(rows) == 4
    first = rows[0]
    assert first["reasoning"] == 'The output says "nine weeks", the source "eight weeks".\nAlso, "national government".'
    assert (first["score"], first["p"], first["display_score"], first["cached"], first["cost"]) == (
        "2", "", "2", "true", "0.0")
    assert (first["latency"], first["input_tokens"], first["cached_call_latency"], first["cached_call_input_tokens"]) == (
        "", "", "4.25", "700")
    assert (rows[1]["status"], rows[1]["score"], rows[1]["raw"]) == ("parse_error", "", "Score: four, probably")
    assert first["sentence_scores"] == "[2, 5]" and rows[1]["sentence_scores"] == ""
    assert rows[3]["p"] == "0.25" and rows[3]["cached"] == "false"


@pytest.mark.django_db
def test_an_exported_jsonl_imports_again_into_another_project(judged: dict[str, Any], batch: Batch) -> None:
    exported = "".join(export_lines(judged["project"], what="judgements", format="jsonl")).encode()
    other = Project.objects.create(name="Copy", slug="copy")
    copy_batch = Batch.objects.create(project=other, name="batch-1")
    for sample in batch.samples.select_related("passage"):
        passage, _ = other.passages.get_or_create(external_id=sample.passage.external_id, text=sample.passage.text)
        other.samples.create(passage=passage, batch=copy_batch, external_id=sample.external_id, summary=sample.summary)
    report = import_judgements(other, [("export.jsonl", exported)])
    assert report.judgements == 4
    again = parse_jsonl("".join(export_lines(other, what="judgements", format="jsonl")))
    original = parse_jsonl(exported.decode())
    # Where it came from changes (a new imported judge and run); what it said does not.
    said = ("sample", "sample_external_id", "batch", "judge", "status", "score", "p", "display_score", "reasoning",
            "raw", "error", "latency", "input_tokens", "output_tokens", "cost", "cached", "cached_call_latency",
            "cached_call_input_tokens", "cached_call_output_tokens", "sentence_scores")
    assert [{k: row[k] for k in said} for row in again] == [{k: row[k] for k in said} for row in original]
    assert {row["kind"] for row in again} == {"imported"}


@pytest.mark.django_db
def test_audits_export_answered_audits_with_the_judge_score_seen(judged: dict[str, Any]) -> None:
    project, samples = judged["project"], judged["samples"]
    grace = make_user("grace")
    Membership.objects.create(project=project, user=grace, role=Membership.Role.AUDITOR)
    now = timezone.now()
    item = AuditItem.objects.create(project=project, sample=samples["0"], flagged_by=judged["ok"], reason="score 2 <= 3")
    Audit.objects.create(item=item, auditor=grace, judgement=judged["ok"], score=1, agreed=False, reasoning_wrong=True,
                         note='missed "national government"', blind=True, blind_score=1,
                         served_at=now - timedelta(seconds=42), answered_at=now, seconds=42.0,
                         changed_at=now + timedelta(seconds=30))
    waiting = AuditItem.objects.create(project=project, sample=samples["1"], reason="score 2 <= 3")
    Audit.objects.create(item=waiting, auditor=grace, served_at=now)  # served, not answered: no verdict to export

    rows = parse_jsonl("".join(export_lines(project, what="audits", format="jsonl")))
    assert rows == [{
        "item": item.pk, "sample": "0", "batch": "batch-1", "auditor": "grace", "score": 1, "agreed": False,
        "reasoning_wrong": True, "note": 'missed "national government"', "seconds": 42.0, "blind": True,
        "blind_score": 1, "judge": "gpt-test", "judge_score_seen": 2, "answered_at": now.isoformat(),
        "changed_at": (now + timedelta(seconds=30)).isoformat(),
        "sample_id": samples["0"].pk, "judgement": judged["ok"].pk, "run": judged["run"].pk,
    }]
    table = list(csv.DictReader(io.StringIO("".join(export_lines(project, what="audits", format="csv")), newline="")))
    assert tuple(table[0]) == AUDIT_FIELDS
    assert (table[0]["auditor"], table[0]["score"], table[0]["agreed"], table[0]["blind"]) == ("grace", "1", "false", "true")
    assert (table[0]["blind_score"], table[0]["changed_at"]) == ("1", (now + timedelta(seconds=30)).isoformat())


@pytest.mark.django_db
def test_no_export_holds_an_api_key_even_when_the_variable_is_set(
    judged: dict[str, Any], monkeypatch: Any, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    written = []
    for what in ("judgements", "audits"):
        for format in ("jsonl", "csv"):
            out = tmp_path / f"{what}.{format}"
            call_command("export_judgements", "--project", "demo", "--what", what, "--format", format,
                         "--out", str(out), stdout=StringIO())
            written.append(out.read_text(encoding="utf-8"))
    assert "gpt-test" in written[0]  # the export did run
    for text in written:
        assert SECRET not in text and "sk-test" not in text
        assert "OPENAI_API_KEY" not in text  # not even the variable's name


@pytest.mark.django_db
def test_the_export_command_writes_a_file_and_names_bad_options(judged: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "sub" / "j.csv"
    printed = StringIO()
    call_command("export_judgements", "--project", "demo", "--what", "judgements", "--format", "csv",
                 "--out", str(out), "--run", str(judged["run"].pk), stdout=printed)
    assert printed.getvalue().strip() == f"wrote 3 judgements to {out}"
    assert len(list(csv.DictReader(out.open(encoding="utf-8", newline="")))) == 3
    with pytest.raises(CommandError, match="--project: no span project 'nope'"):
        call_command("export_judgements", "--project", "nope", "--out", str(out))
    with pytest.raises(CommandError, match="--run: no judge run 999999 in project 'demo'"):
        call_command("export_judgements", "--project", "demo", "--out", str(out), "--run", "999999")
    with pytest.raises(CommandError, match="is a directory"):
        call_command("export_judgements", "--project", "demo", "--out", str(tmp_path))
