"""The JSONL export's worst labels count only those who submitted the batch, the results page's rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Assignment, Batch, Passage, Project, Sample
from annotate.services import spans
from annotate.services.stats import sample_worst_labels
from annotate.taxonomy import CATEGORY_NAMES

pytestmark = pytest.mark.django_db


def export_lines(tmp_path: Path, *extra: str) -> dict[str, dict[str, Any]]:
    out = tmp_path / "d.jsonl"
    call_command("export", "--project", "demo", "--format", "jsonl", "--out", str(out), *extra)
    return {f"{line['batch']}/{line['sample_id']}": line for line in map(json.loads, out.read_text().splitlines())}


@pytest.fixture
def half_submitted(project: Project, batch: Batch, alice: Any, bob: Any) -> dict[str, Sample]:
    """alice submitted batch-1; bob has spans on it but has not; nobody submitted batch-2."""
    first, second, third = batch.samples.order_by("position")
    spans.create_span(first, alice, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"])
    spans.create_span(first, alice, round=1, start=0, end=7, labels=["Benign"])
    spans.create_span(first, bob, round=1, start=0, end=7, labels=["Questionable"])
    spans.create_span(second, bob, round=1, start=0, end=5, labels=["Unwanted.Extrinsic"])  # in progress
    for sample in (first, second, third):
        spans.mark_sample_done(sample, alice, round=1, done=True)
    spans.mark_sample_done(first, bob, round=1, done=True)  # one of three: not submitted
    other = Batch.objects.create(project=project, name="batch-2", position=1)
    passage = Passage.objects.get(project=project)
    unsubmitted = Sample.objects.create(project=project, passage=passage, batch=other, external_id="x",
                                        summary="The bridge reopened.", generator="model-d")
    Assignment.objects.create(batch=other, annotator=bob)
    spans.create_span(unsubmitted, bob, round=1, start=0, end=10, labels=["Unwanted.Extrinsic"])
    assert list(Assignment.objects.filter(status=Assignment.Status.SUBMITTED).values_list(
        "annotator__username", "batch__name")) == [("alice", "batch-1")]
    return {"first": first, "second": second, "third": third, "unsubmitted": unsubmitted}


def test_work_in_progress_does_not_count_in_the_worst_labels(tmp_path: Path, half_submitted: dict[str, Sample]) -> None:
    lines = export_lines(tmp_path)
    found = {key: (line["worst_label_by_annotator"], line["worst_label"]) for key, line in lines.items()}
    assert found == {
        "batch-1/0": ({"alice": "Unwanted"}, "Unwanted"),
        # bob's Unwanted span is his work in progress: exported, but not a verdict yet.
        "batch-1/1": ({"alice": "Consistent"}, "Consistent"),
        "batch-1/2": ({"alice": "Consistent"}, "Consistent"),
        "batch-2/x": ({}, None),
    }
    # The annotations themselves are all there, bob's included.
    assert [a["annotator_name"] for a in lines["batch-1/1"]["annotations"]] == ["bob"]
    assert len(lines["batch-1/0"]["annotations"]) == 3 and len(lines["batch-2/x"]["annotations"]) == 1


def test_the_export_agrees_with_the_results_pages_verdicts(tmp_path: Path, project: Project,
                                                           half_submitted: dict[str, Sample]) -> None:
    lines = {line["sample_id"]: line["worst_label"] for line in export_lines(tmp_path).values()}
    verdicts = {Sample.objects.get(pk=v.sample_id).external_id: CATEGORY_NAMES[v.category]
                for v in sample_worst_labels(project, 1)}
    assert verdicts == {"0": "Unwanted", "1": "Consistent", "2": "Consistent"}
    assert lines == {**verdicts, "x": None}


def test_a_round_nobody_has_submitted_exports_without_verdicts(tmp_path: Path, batch: Batch, alice: Any,
                                                                half_submitted: dict[str, Sample]) -> None:
    Assignment.objects.create(batch=batch, annotator=alice, round=2)  # a round that exists; nothing submitted
    lines = export_lines(tmp_path, "--round", "2")
    assert {line["worst_label"] for line in lines.values()} == {None}
    assert all(line["worst_label_by_annotator"] == {} and line["annotations"] == [] for line in lines.values())
