from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, SampleReview, SpanAnnotation
from annotate.services import freeze, spans

pytestmark = pytest.mark.django_db


def test_create_span_stores_code_point_offsets_and_parent_label(sample: Any, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"], note="eight")
    assert span.text == sample.summary[51:61]
    assert span.labels == ["Unwanted", "Unwanted.Intrinsic"]
    assert span.version == 1


def test_non_bmp_offsets(batch: Any, alice: Any) -> None:
    sample = batch.samples.get(generator="model-c")
    start = sample.summary.index("reopened")
    span = spans.create_span(sample, alice, round=1, start=start, end=start + 8, labels=["Benign"])
    assert span.text == "reopened" and start == 13


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"start": 5, "end": 5}, "start", "start must be before end (5..5)"),
        ({"start": 5, "end": 2}, "start", "start must be before end (5..2)"),
        ({"start": -1, "end": 4}, "start", "-1..4 is outside a text of"),
        ({"start": 0, "end": 10_000}, "start", "outside"),
        ({"start": "0", "end": 4}, "start", "whole number"),
        ({"start": 0, "end": 4, "labels": ["Nope"]}, "labels", "unknown label 'Nope'"),
        ({"start": 0, "end": 4, "labels": []}, "labels", "at least one"),
        ({"start": 0, "end": 4, "source_start": 3}, "source_start", "both be set"),
        ({"start": 0, "end": 4, "source_start": 3, "source_end": 99_999}, "source_start", "outside"),
    ],
)
def test_bad_span_input_names_the_field(sample: Any, alice: Any, fields: dict, field: str, message: str) -> None:
    arguments = {"labels": ["Benign"], **fields}
    with pytest.raises(spans.SpanError) as failure:
        spans.create_span(sample, alice, round=1, **arguments)
    assert failure.value.field == field and message in failure.value.message
    assert not SpanAnnotation.objects.exists()


def test_unassigned_round_is_refused(sample: Any, alice: Any) -> None:
    with pytest.raises(spans.SpanError, match="not assigned to round 2"):
        spans.create_span(sample, alice, round=2, start=0, end=4, labels=["Benign"])


def test_stale_version_never_overwrites_a_newer_save(sample: Any, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    tab_one = SpanAnnotation.objects.get(pk=span.pk)
    tab_two = SpanAnnotation.objects.get(pk=span.pk)
    spans.update_span(tab_one, version=1, changes={"note": "from tab one"})
    with pytest.raises(spans.StaleVersion) as stale:
        spans.update_span(tab_two, version=1, changes={"note": "from tab two"})
    assert stale.value.current.note == "from tab one"
    assert SpanAnnotation.objects.get(pk=span.pk).note == "from tab one"
    with pytest.raises(spans.StaleVersion):
        spans.delete_span(tab_two, version=1)
    spans.delete_span(tab_two, version=2)
    assert not SpanAnnotation.objects.exists()


def test_relabel_and_link_source(sample: Any, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    span = spans.update_span(span, version=1, changes={"labels": ["Questionable"], "source_start": 4, "source_end": 10})
    assert span.labels == ["Questionable"] and span.source_text == sample.passage.text[4:10] and span.version == 2
    span = spans.update_span(span, version=2, changes={"source_start": None, "source_end": None})
    assert span.source_start is None and span.source_text is None


def test_done_on_every_sample_submits_the_assignment(batch: Any, alice: Any) -> None:
    samples = list(batch.samples.all())
    for sample in samples:
        spans.mark_sample_done(sample, alice, round=1, done=True, seconds=12)
    assignment = Assignment.objects.get(batch=batch, annotator=alice)
    assert assignment.status == "submitted" and assignment.submitted_at is not None
    assert SampleReview.objects.filter(annotator=alice, done=True).count() == len(samples)
    # Submitted work is frozen: "not done" is refused and the submission stands (test_frozen.py).
    with pytest.raises(freeze.RoundFrozen):
        spans.mark_sample_done(samples[0], alice, round=1, done=False)
    assignment.refresh_from_db()
    assert assignment.status == "submitted"
