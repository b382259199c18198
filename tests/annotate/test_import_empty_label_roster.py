"""Who annotated an imported batch: spans with an empty label list are ignored, so they make no one an annotator.

DESIGN.md: "Spans with an empty label list are ignored", and for imported data
the batch's annotators are "every annotator with at least one span in that
batch, unless the import names a roster". Before, an importer whose spans in a
batch all had empty label lists got a submitted assignment there: a row of
Consistent on every sample, which moved alpha. Every figure reads the roster
from those assignments (annotate.services.stats.rosters), so the import is the
one place that decides it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command

from annotate.models import Assignment, Batch, Membership, Project, SpanAnnotation
from annotate.services import stats
from tests.conftest import make_user

pytestmark = pytest.mark.django_db

SUMMARY = "alpha beta gamma delta"
SOURCE = "A source text that the summaries come from."
SCHEME = "C|B|Q|U"
# Worst label per sample: Ana and Bo disagree on some; Cy only ever left spans without a label.
ANA = ["Unwanted", "Questionable", None, "Benign", "Unwanted", None]
BO = ["Unwanted", None, "Questionable", "Benign", None, "Benign"]
CY_EMPTY_ON = [0, 2, 4]


def span(name: str, label: list[str], number: int) -> dict[str, Any]:
    return {
        "annot_id": number, "annotator_id": f"id-{name}", "annotator_name": name, "label": label, "note": "",
        "summary_span": "beta", "summary_start": 6, "summary_end": 10,
        "source_span": None, "source_start": None, "source_end": None,
    }


def batch_document() -> dict[str, Any]:
    samples = []
    number = 0
    for index in range(len(ANA)):
        annotations = []
        for name, labels in (("Ana", ANA), ("Bo", BO)):
            if labels[index] is not None:
                number += 1
                annotations.append(span(name, [labels[index]], number))
        if index in CY_EMPTY_ON:
            number += 1
            annotations.append(span("Cy", [], number))
        samples.append({"sample_id": index, "source": SOURCE, "summary": SUMMARY, "annotations": annotations,
                        "metadata": {"summarizer": f"org/model-{index % 2}"}})
    return {"samples": samples}


def import_batch(tmp_path: Path, *extra: str) -> Batch:
    path = tmp_path / "batch_1.json"
    path.write_text(json.dumps(batch_document()), encoding="utf-8")
    call_command("import_faithbench", str(path), "--project", "fb", *extra)
    return Batch.objects.get(project__slug="fb")


def code(labels: list[str | None]) -> list[float]:
    """Each worst label's place in the scheme C|B|Q|U; no span is Consistent."""
    order = {"Consistent": 0, "Benign": 1, "Questionable": 2, "Unwanted": 3}
    return [float(order[label or "Consistent"]) for label in labels]


def test_an_importer_with_only_empty_label_spans_is_no_annotator_of_the_batch(tmp_path: Path) -> None:
    batch = import_batch(tmp_path)
    project = batch.project
    names = sorted(Assignment.objects.filter(batch=batch).values_list("annotator__username", flat=True))
    assert names == ["Ana", "Bo"]
    submitters = stats.batch_submitters(project, 1)
    assert list(submitters) == [batch.pk] and len(submitters[batch.pk]) == 2
    # Cy's spans are kept (an export gives them back), and Cy is a member, found again by a re-import.
    assert SpanAnnotation.objects.filter(annotator__username="Cy", labels=[]).count() == len(CY_EMPTY_ON)
    assert Membership.objects.filter(project=project, user__username="Cy").exists()

    report = stats.project_agreement(project, SCHEME, "nominal", "pooled", 1)
    two = np.array([code(ANA), code(BO)])
    expected = float(krippendorff.alpha(reliability_data=two, level_of_measurement="nominal"))
    assert report["annotators"] == 2
    assert report["alpha"] == pytest.approx(expected)
    # The old roster (Cy as a row of Consistent) gives another figure: the test tells the two apart.
    with_cy = np.vstack([two, np.zeros((1, len(ANA)))])
    assert expected != pytest.approx(float(krippendorff.alpha(reliability_data=with_cy, level_of_measurement="nominal")))


def test_a_roster_that_names_the_empty_label_importer_still_counts_them(tmp_path: Path) -> None:
    batch = import_batch(tmp_path, "--roster", "Ana,Bo,Cy")
    names = sorted(Assignment.objects.filter(batch=batch).values_list("annotator__username", flat=True))
    assert names == ["Ana", "Bo", "Cy"]
    assert stats.project_agreement(batch.project, SCHEME, "nominal", "pooled", 1)["annotators"] == 3


def test_a_native_submitter_without_any_span_still_counts(tmp_path: Path) -> None:
    batch = import_batch(tmp_path)
    native = make_user("dee")
    Membership.objects.create(project=batch.project, user=native, role=Membership.Role.ANNOTATOR)
    Assignment.objects.create(batch=batch, annotator=native, round=1, status=Assignment.Status.SUBMITTED)
    assert native.pk in stats.batch_submitters(batch.project, 1)[batch.pk]
    report = stats.project_agreement(Project.objects.get(slug="fb"), SCHEME, "nominal", "pooled", 1)
    assert report["annotators"] == 3
