"""An id given twice where the format means it to name one thing is refused, naming both places; nothing is stored.

A repeated sample_id in one batch of the plain samples JSONL left two samples that the judgement import and a
re-import of the project's FaithBench export cannot tell apart; a repeated annot_id in one FaithBench file
likewise names two annotations with one id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Batch, Project, Sample, SpanAnnotation
from annotate.services import ingest
from tests.annotate.test_ingest import example

pytestmark = pytest.mark.django_db


def line(summary: str, **extra: Any) -> str:
    return json.dumps({"passage_id": "p1", "source": "The bridge reopened.", "summary": summary,
                       "generator": "org/model", **extra})


def refusal(tmp_path: Path, name: str, content: str) -> str:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CommandError) as failure:
        call_command("import_faithbench", str(path), "--project", "fb")
    assert not Sample.objects.exists() and not SpanAnnotation.objects.exists() and not Batch.objects.exists()
    return str(failure.value)


def test_a_sample_id_repeated_in_one_batch_of_the_samples_jsonl_is_refused(tmp_path: Path) -> None:
    content = "\n".join([line("One.", sample_id="x1"), line("Two.", sample_id="x2"), line("Three.", sample_id="x1")])
    message = refusal(tmp_path, "plain.jsonl", content)
    assert "plain.jsonl: lines 1 and 3" in message and "'x1'" in message and "batch 'plain-1'" in message


def test_a_sample_id_equal_to_another_lines_number_is_refused(tmp_path: Path) -> None:
    # A line without a sample_id takes its line number: "2" here, which line 1 also claims.
    content = "\n".join([line("One.", sample_id="2", batch="b"), line("Two.", batch="b")])
    message = refusal(tmp_path, "plain.jsonl", content)
    assert "plain.jsonl: lines 1 and 2" in message and "'2'" in message and "batch 'b'" in message


def test_every_repeat_is_reported_with_the_files_other_problems() -> None:
    content = "\n".join([line("One.", sample_id="a", batch="b"), line("Two.", sample_id="a", batch="b"),
                         line("Three.", sample_id="c", batch="b"), line("Four.", sample_id="c", batch="b"),
                         "not json"])
    with pytest.raises(ingest.ImportProblems) as failure:
        ingest.parse_samples_jsonl(content, "plain.jsonl")
    assert len(failure.value.messages) == 3
    assert any("lines 1 and 2" in m for m in failure.value.messages)
    assert any("lines 3 and 4" in m for m in failure.value.messages)


def test_one_sample_id_in_two_batches_is_accepted() -> None:
    content = "\n".join([line("One.", sample_id="x1", batch="a"), line("Two.", sample_id="x1", batch="b")])
    batches = ingest.parse_samples_jsonl(content, "plain.jsonl")
    assert [(b.name, [s.external_id for s in b.samples]) for b in batches] == [("a", ["x1"]), ("b", ["x1"])]


def test_an_annot_id_repeated_in_one_faithbench_file_is_refused(tmp_path: Path) -> None:
    document = example()
    document["samples"][1]["annotations"][0]["annot_id"] = 2  # sample 0's annotation #1 has annot_id 2
    message = refusal(tmp_path, "batch_1.json", json.dumps(document))
    assert message.startswith("nothing was imported: ") and message.endswith(
        "batch_1.json: sample 1 (#1): annotation #0 (annot_id 2): field 'annot_id' repeats sample 0 (#0): "
        "annotation #1 (annot_id 2); an annot_id names one annotation of its file"
    )


def test_a_faithbench_export_of_samples_from_the_jsonl_imports_again(tmp_path: Path) -> None:
    content = "\n".join([line("One.", sample_id="x1"), line("Two.")])
    project = Project.objects.create(name="Plain", slug="plain")
    ingest.import_files(project, [("plain.jsonl", content.encode())])
    out = tmp_path / "out"
    call_command("export", "--project", "plain", "--format", "faithbench", "--out", str(out))
    call_command("import_faithbench", *map(str, out.iterdir()), "--project", "copy")
    assert sorted(Sample.objects.filter(project__slug="copy").values_list("external_id", flat=True)) == ["2", "x1"]


def test_a_span_made_here_does_not_repeat_an_imported_annot_id_in_the_export(tmp_path: Path, alice: Any) -> None:
    from annotate.models import Assignment, Membership
    from annotate.services import spans

    (tmp_path / "batch_1.json").write_text(json.dumps(example()), encoding="utf-8")
    call_command("import_faithbench", str(tmp_path / "batch_1.json"), "--project", "fb")
    batch = Batch.objects.get(project__slug="fb")
    Membership.objects.create(project=batch.project, user=alice, role=Membership.Role.ANNOTATOR)
    Assignment.objects.create(batch=batch, annotator=alice)
    sample = batch.samples.order_by("position").first()
    made_here = spans.create_span(sample, alice, round=1, start=0, end=8, labels=["Benign"])
    # An imported span whose file happened to give it the id the new span got from the database.
    imported = SpanAnnotation.objects.exclude(pk=made_here.pk).order_by("id").first()
    imported.imported_fields = {**imported.imported_fields, "annot_id": made_here.pk}
    imported.save(update_fields=["imported_fields"])
    out = tmp_path / "out"
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(out))
    written = json.loads((out / "batch_1.json").read_text(encoding="utf-8"))
    ids = [a["annot_id"] for s in written["samples"] for a in s["annotations"]]
    assert ids.count(made_here.pk) == 1 and f"faithlab-{made_here.pk}" in ids
    call_command("import_faithbench", str(out / "batch_1.json"), "--project", "copy")
    assert SpanAnnotation.objects.filter(sample__project__slug="copy").count() == 5
