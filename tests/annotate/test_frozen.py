"""Frozen rounds, re-openings, stale gold labels, blind annotation and duplicate spans."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Assignment, GoldLabel, RoundReopening, Sample, SampleReview, SpanAnnotation
from annotate.services import freeze, rounds, spans
from annotate.services.pages import annotation_page_data
from tests.conftest import login

pytestmark = pytest.mark.django_db


def finish(batch: Any, person: Any, round: int = 1) -> None:
    for sample in batch.samples.all():
        spans.mark_sample_done(sample, person, round=round, done=True)


def post_json(client: Any, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_submitted_round_refuses_every_write_with_409_and_the_reason(batch: Any, sample: Any, alice: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    finish(batch, alice)
    client = login(alice)
    before = list(SpanAnnotation.objects.values_list("pk", "start", "end", "labels", "version"))

    created = post_json(client, "/api/spans/", {"sample": sample.pk, "start": 8, "end": 15, "labels": ["Benign"]})
    changed = client.patch(f"/api/spans/{span.pk}/", json.dumps({"version": span.version, "labels": ["Questionable"]}),
                           content_type="application/json")
    deleted = client.delete(f"/api/spans/{span.pk}/?version={span.version}")
    undone = post_json(client, f"/api/samples/{sample.pk}/review/", {"round": 1, "done": False})

    for response in (created, changed, deleted, undone):
        assert response.status_code == 409, response.content
        assert response.json()["frozen"] is True
        assert "You submitted round 1 of batch-1" in response.json()["detail"]
        assert "re-open" in response.json()["detail"]
    assert list(SpanAnnotation.objects.values_list("pk", "start", "end", "labels", "version")) == before
    assert SampleReview.objects.get(sample=sample, annotator=alice).done
    assert Assignment.objects.get(batch=batch, annotator=alice).status == Assignment.Status.SUBMITTED


def test_marking_a_done_sample_done_again_never_unmarks_it(batch: Any, sample: Any, alice: Any) -> None:
    client = login(alice)
    assert post_json(client, f"/api/samples/{sample.pk}/review/", {"round": 1, "done": True}).json()["done"]
    again = post_json(client, f"/api/samples/{sample.pk}/review/", {"round": 1, "done": True})
    assert again.status_code == 200 and again.json()["done"] is True
    finish(batch, alice)  # submitted: D on a done sample still answers, and changes nothing
    frozen_again = post_json(client, f"/api/samples/{sample.pk}/review/", {"round": 1, "done": True})
    assert frozen_again.status_code == 200 and frozen_again.json()["done"] is True
    assert SampleReview.objects.get(sample=sample, annotator=alice).done


def test_mark_not_done_works_until_submission(batch: Any, sample: Any, alice: Any) -> None:
    client = login(alice)
    post_json(client, f"/api/samples/{sample.pk}/review/", {"round": 1, "done": True})
    response = post_json(client, f"/api/samples/{sample.pk}/review/", {"round": 1, "done": False})
    assert response.status_code == 200 and response.json()["done"] is False


def test_round_one_is_frozen_for_everyone_once_round_two_opens(batch: Any, sample: Any, alice: Any, bob: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    finish(batch, alice)
    finish(batch, bob)
    rounds.open_reconciliation_round(batch)
    # Round 2 alone freezes round 1, whatever round 1's status says. (Re-opening round 1 now is refused:
    # tests/annotate/test_reopen_superseded.py.)
    Assignment.objects.filter(batch=batch, round=1).update(status=Assignment.Status.ASSIGNED)
    page = annotation_page_data(Sample.objects.get(pk=sample.pk), alice, "annotator", 1)
    assert page["can_edit"] is False and page["can_mark_not_done"] is False
    assert "Round 2 of batch-1 is open, so round 1 is frozen for everyone" in page["frozen"]
    # Nobody can re-open it now (round 2 began from copies of its spans): the notice does not send anyone to ask.
    assert "cannot be re-opened" in page["frozen"] and "ask an admin" not in page["frozen"]
    with pytest.raises(freeze.RoundFrozen, match="Round 2 of batch-1 is open"):
        spans.update_span(SpanAnnotation.objects.get(pk=span.pk), version=span.version, changes={"note": "late"})
    # Round 2 itself is open for editing.
    round_two = annotation_page_data(Sample.objects.get(pk=sample.pk), alice, "annotator", 2)
    assert round_two["can_edit"] is True and round_two["frozen"] is None


def test_admin_reopens_one_round_with_a_reason_and_resubmission_freezes_it_again(
    batch: Any, sample: Any, alice: Any, bob: Any, admin_user: Any
) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    finish(batch, alice)
    finish(batch, bob)
    assignment = Assignment.objects.get(batch=batch, annotator=alice, round=1)

    response = login(admin_user).post(
        reverse("reopen-round", args=["demo", assignment.pk]), {"reason": "alice asked to fix sample 1"}
    )
    assert response.status_code == 302
    assignment.refresh_from_db()
    assert assignment.reopened and assignment.status == Assignment.Status.ASSIGNED
    entry = RoundReopening.objects.get()
    assert (entry.assignment, entry.reopened_by, entry.reason, entry.closed_at) == (
        assignment, admin_user, "alice asked to fix sample 1", None)
    # Bob's round stays frozen; alice may write again.
    assert Assignment.objects.get(batch=batch, annotator=bob).status == Assignment.Status.SUBMITTED
    updated = spans.update_span(SpanAnnotation.objects.get(pk=span.pk), version=span.version,
                                changes={"labels": ["Questionable"]})
    assert updated.labels == ["Questionable"]

    page = login(admin_user).get(reverse("project", args=["demo"])).content.decode()
    assert "alice asked to fix sample 1" in page and 'data-role="reopened"' in page

    spans.mark_sample_done(Sample.objects.get(pk=sample.pk), alice, round=1, done=True)  # D only moves on
    assignment.refresh_from_db()
    assert assignment.reopened and assignment.status == Assignment.Status.ASSIGNED
    freeze.submit_round_again(batch, alice, round=1)  # Submit again
    assignment.refresh_from_db()
    entry.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and not assignment.reopened
    assert entry.closed_at is not None
    with pytest.raises(freeze.RoundFrozen):
        spans.create_span(Sample.objects.get(pk=sample.pk), alice, round=1, start=8, end=15, labels=["Benign"])


@pytest.mark.parametrize(
    ("reason", "message"),
    [("", "say why this round is re-opened"), ("   ", "say why this round is re-opened"),
     ("x" * 2001, "at most 2000 characters")],
)
def test_reopening_needs_a_reason(batch: Any, alice: Any, admin_user: Any, reason: str, message: str) -> None:
    finish(batch, alice)
    assignment = Assignment.objects.get(batch=batch, annotator=alice)
    with pytest.raises(freeze.ReopenError, match=message):
        freeze.reopen_round(assignment, admin_user, reason)
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SUBMITTED and not assignment.reopened
    assert not RoundReopening.objects.exists()


def test_an_open_round_cannot_be_reopened(batch: Any, alice: Any, admin_user: Any) -> None:
    assignment = Assignment.objects.get(batch=batch, annotator=alice)
    with pytest.raises(freeze.ReopenError, match="is not frozen"):
        freeze.reopen_round(assignment, admin_user, "nothing to re-open")
    assert not RoundReopening.objects.exists()


def test_only_project_admins_reopen(batch: Any, alice: Any, bob: Any, charlie: Any) -> None:
    finish(batch, alice)
    assignment = Assignment.objects.get(batch=batch, annotator=alice)
    url = reverse("reopen-round", args=["demo", assignment.pk])
    assert login(bob).post(url, {"reason": "let me"}).status_code == 403
    assert login(charlie).post(url, {"reason": "let me"}).status_code == 404
    assert login(alice).get(url).status_code == 405
    assert not RoundReopening.objects.exists()


def test_gold_label_built_from_spans_changed_later_is_stale(
    batch: Any, sample: Any, alice: Any, bob: Any, admin_user: Any
) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    finish(batch, alice)
    finish(batch, bob)
    rounds.adjudicate_sample(sample, admin_user, span_ids=[span.pk])
    curation = reverse("curation", args=["demo"])
    assert 'data-role="stale"' not in login(admin_user).get(curation).content.decode()

    freeze.reopen_round(Assignment.objects.get(batch=batch, annotator=alice), admin_user, "fix")
    spans.update_span(SpanAnnotation.objects.get(pk=span.pk), version=span.version, changes={"note": "changed"})
    assert sample.pk in freeze.stale_gold_samples(batch.project)
    page = login(admin_user).get(curation).content.decode()
    assert 'data-role="stale"' in page and "1 gold label was built from spans that changed" in page

    # While re-opened, alice's round is work in progress: like every curation figure, the gold label takes only
    # the submitters' spans (rounds.submitted_spans).
    with pytest.raises(rounds.RoundError, match="has not submitted that round"):
        rounds.adjudicate_sample(sample, admin_user, span_ids=[span.pk])
    freeze.submit_round_again(batch, alice, round=1)
    rounds.adjudicate_sample(sample, admin_user, span_ids=[span.pk])  # the curator looks again
    assert freeze.stale_gold_samples(batch.project) == {}

    freeze.reopen_round(Assignment.objects.get(batch=batch, annotator=alice), admin_user, "remove it")
    current = SpanAnnotation.objects.get(pk=span.pk)
    spans.delete_span(current, version=current.version)
    assert "deleted" in freeze.stale_gold_samples(batch.project)[sample.pk]
    assert GoldLabel.objects.filter(sample=sample).exists()


def test_annotators_work_blind_through_the_api(batch: Any, sample: Any, alice: Any, admin_user: Any) -> None:
    Sample.objects.filter(pk=sample.pk).update(metadata={"hhem-2.1": 0.12, "gpt_4o": 0})
    detail = login(alice).get(f"/api/samples/{sample.pk}/").json()
    listed = login(alice).get("/api/samples/?project=demo").json()
    listed = listed.get("results", listed)
    assert detail["metadata"] == {} and detail["generator"] is None  # hidden: null, never a name nor ""
    assert all(row["metadata"] == {} and row["generator"] is None for row in listed)
    admin_view = login(admin_user).get(f"/api/samples/{sample.pk}/").json()
    assert admin_view["metadata"] == {"hhem-2.1": 0.12, "gpt_4o": 0} and admin_view["generator"] == "model-a"

    batch.project.reveal_generator = True
    batch.project.save()
    revealed = login(alice).get(f"/api/samples/{sample.pk}/").json()
    assert revealed["generator"] == "model-a" and revealed["metadata"] == {}


def test_the_annotation_page_hides_the_generator_unless_revealed(batch: Any, sample: Any, alice: Any) -> None:
    Sample.objects.filter(pk=sample.pk).update(generator="acme/secret-model-7b", metadata={"hhem-2.1": 0.4321})
    url = reverse("sample", args=["demo", sample.pk])
    page = login(alice).get(url).content.decode()
    assert "secret-model-7b" not in page and "0.4321" not in page
    batch.project.reveal_generator = True
    batch.project.save()
    assert "acme/secret-model-7b" in login(alice).get(url).content.decode()


def test_project_admin_turns_generator_reveal_on_and_off(project: Any, admin_user: Any, alice: Any) -> None:
    url = reverse("project-settings", args=["demo"])
    assert login(alice).post(url, {"reveal_generator": "on"}).status_code == 403
    project.refresh_from_db()
    assert project.reveal_generator is False
    login(admin_user).post(url, {"reveal_generator": "on"})
    project.refresh_from_db()
    assert project.reveal_generator is True
    login(admin_user).post(url, {})
    project.refresh_from_db()
    assert project.reveal_generator is False


def test_the_same_span_saved_twice_is_stored_once(sample: Any, alice: Any) -> None:
    client = login(alice)
    body = {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Unwanted.Intrinsic"]}
    first = post_json(client, "/api/spans/", body)
    second = post_json(client, "/api/spans/", body)
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert SpanAnnotation.objects.filter(sample=sample, annotator=alice).count() == 1
    # Other labels on the same words are a different span.
    third = post_json(client, "/api/spans/", {**body, "labels": ["Benign"]})
    assert third.status_code == 201
    assert SpanAnnotation.objects.filter(sample=sample, annotator=alice).count() == 2


def test_a_submitted_batch_still_opens_read_only_from_the_home_page(batch: Any, alice: Any) -> None:
    finish(batch, alice)
    home = login(alice).get("/").content.decode()
    first = batch.samples.order_by("position", "id").first()
    assert 'data-role="view-submitted"' in home
    assert f"/projects/demo/samples/{first.pk}/?round=1" in home
    page = login(alice).get(f"/projects/demo/samples/{first.pk}/?round=1").content.decode()
    assert "You submitted round 1 of batch-1" in page
