"""An annotator who no longer holds a round of a batch (unassigned, or reassigned to someone else) changes none of
their stored spans there: PATCH and DELETE answer 403 with the create path's wording and change nothing, as adding a
span is refused. The sample page offers them no edits either."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from annotate.models import Assignment, Batch, Membership, Sample, SpanAnnotation
from annotate.services import freeze, rounds, spans
from annotate.services.members import assign_annotator, reassign_annotator, unassign_annotator
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def patch(client: Any, span: SpanAnnotation, body: dict[str, Any]) -> Any:
    return client.patch(f"/api/spans/{span.pk}/", json.dumps(body), content_type="application/json")


def page_data(client: Any, sample: Sample, round: int) -> dict[str, Any]:
    html = client.get(f"/projects/demo/samples/{sample.pk}/?round={round}").content.decode()
    found = re.search(r'<script id="page-data" type="application/json">(.*?)</script>', html, re.S)
    assert found, html[:500]
    return json.loads(found.group(1))


def unchanged(span: SpanAnnotation) -> bool:
    stored = SpanAnnotation.objects.filter(pk=span.pk).values("version", "note", "start", "end", "labels").first()
    return stored == {"version": span.version, "note": span.note, "start": span.start, "end": span.end,
                      "labels": span.labels}


@pytest.fixture(params=["unassigned", "reassigned"])
def bobs_span(request: pytest.FixtureRequest, batch: Batch, sample: Sample, bob: Any) -> SpanAnnotation:
    """Bob saved a span in round 1, then lost the round: unassigned, or reassigned to cleo. He stays a member."""
    span = spans.create_span(sample, bob, round=1, start=0, end=7, labels=["Benign"], note="kept")
    assignment = Assignment.objects.get(batch=batch, annotator=bob, round=1)
    if request.param == "unassigned":
        unassign_annotator(assignment, confirm=True)
    else:
        cleo = make_user("cleo")
        Membership.objects.create(project=batch.project, user=cleo, role=Membership.Role.ANNOTATOR)
        reassign_annotator(assignment, cleo.pk, confirm=True)
    assert Membership.objects.filter(project=batch.project, user=bob).exists()
    return span


def test_patching_a_span_of_a_round_no_longer_held_is_refused_and_changes_nothing(
    bobs_span: SpanAnnotation, bob: Any
) -> None:
    response = patch(login(bob), bobs_span, {"version": bobs_span.version, "note": "changed", "start": 1})
    assert response.status_code == 403, response.content
    assert response.json()["detail"] == (
        "you are not assigned to round 1 of batch 'batch-1', so your spans there can no longer be changed; they "
        "stay stored as they are (exports list them), and nothing was changed"
    )
    assert unchanged(bobs_span)


def test_the_refusal_comes_before_the_body_is_read(bobs_span: SpanAnnotation, bob: Any) -> None:
    """As on create, a caller who may not write is told so first, not what the body lacks."""
    response = patch(login(bob), bobs_span, {"labels": ["No such label"]})
    assert response.status_code == 403, response.content
    assert unchanged(bobs_span)


def test_deleting_a_span_of_a_round_no_longer_held_is_refused_and_keeps_it(
    bobs_span: SpanAnnotation, bob: Any
) -> None:
    response = login(bob).delete(f"/api/spans/{bobs_span.pk}/?version={bobs_span.version}")
    assert response.status_code == 403, response.content
    assert "you are not assigned to round 1 of batch 'batch-1'" in response.json()["detail"]
    assert unchanged(bobs_span)


def test_adding_a_span_is_refused_as_before(bobs_span: SpanAnnotation, bob: Any, sample: Sample) -> None:
    before = SpanAnnotation.objects.count()
    response = login(bob).post("/api/spans/", {"sample": sample.pk, "round": 1, "start": 8, "end": 15,
                                               "labels": ["Benign"]}, content_type="application/json")
    assert response.status_code == 400 and response.json() == {"sample": ["no such sample"]}
    assert SpanAnnotation.objects.count() == before


def test_the_services_refuse_too(bobs_span: SpanAnnotation) -> None:
    """Whoever calls them (not only the API, whose lookup refuses first)."""
    span = SpanAnnotation.objects.select_related("sample", "annotator").get(pk=bobs_span.pk)
    with pytest.raises(freeze.NotAssigned, match="you are not assigned to round 1 of batch 'batch-1'"):
        spans.update_span(span, version=span.version, changes={"note": "changed"})
    with pytest.raises(freeze.NotAssigned):
        spans.delete_span(span, version=span.version)
    assert unchanged(bobs_span)


def test_the_sample_page_is_not_his_any_more(bobs_span: SpanAnnotation, bob: Any, sample: Sample) -> None:
    """Holding no round of the batch, he cannot open its samples at all, so the page offers nothing to edit."""
    assert login(bob).get(f"/projects/demo/samples/{sample.pk}/?round=1").status_code == 404


def test_assigned_again_he_may_change_them_again(bobs_span: SpanAnnotation, bob: Any, batch: Batch) -> None:
    assign_annotator(batch, bob.pk)
    response = patch(login(bob), bobs_span, {"version": bobs_span.version, "note": "changed"})
    assert response.status_code == 200, response.content
    assert SpanAnnotation.objects.get(pk=bobs_span.pk).note == "changed"


@pytest.fixture
def unassigned_from_round_two(batch: Batch, sample: Sample, alice: Any, bob: Any) -> SpanAnnotation:
    """Round 1 submitted by alice and bob, round 2 opened, bob saved a round-2 span and was unassigned from round 2:
    he still holds round 1 (frozen), so he still opens the batch's samples."""
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch)
    span = spans.create_span(sample, bob, round=2, start=0, end=7, labels=["Benign"], note="kept")
    unassign_annotator(Assignment.objects.get(batch=batch, annotator=bob, round=2), confirm=True)
    return span


def test_a_round_left_while_holding_another_is_refused_too(unassigned_from_round_two: SpanAnnotation, bob: Any) -> None:
    span = unassigned_from_round_two
    client = login(bob)
    response = patch(client, span, {"version": span.version, "note": "changed"})
    assert response.status_code == 403, response.content
    assert "you are not assigned to round 2 of batch 'batch-1'" in response.json()["detail"]
    assert client.delete(f"/api/spans/{span.pk}/?version={span.version}").status_code == 403
    assert unchanged(span)


def test_the_sample_page_shows_them_read_only_and_says_why(
    unassigned_from_round_two: SpanAnnotation, bob: Any, sample: Sample
) -> None:
    client = login(bob)
    data = page_data(client, sample, 2)
    assert data["can_edit"] is False and data["can_mark_not_done"] is False
    assert [(span["id"], span["mine"]) for span in data["spans"]] == [(unassigned_from_round_two.pk, True)]
    html = client.get(f"/projects/demo/samples/{sample.pk}/?round=2").content.decode()
    assert ("You are not assigned to round 2 of batch-1: your spans there stay stored as they are but can no longer "
            "be changed.") in html
    # His round 1, still held (and frozen), says nothing of the kind.
    assert "You are not assigned" not in client.get(f"/projects/demo/samples/{sample.pk}/?round=1").content.decode()
