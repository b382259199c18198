"""Opening round 2 of a batch and re-opening one annotator's round through the API, by the project's admins only,
with the project page's rules, refusals and log entries; the page and the API do the same to the same batch."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotate.models import Assignment, Batch, Membership, RoundReopening, SpanAnnotation
from annotate.services import spans
from tests.annotate.campaign_helpers import api_json, campaign_state, page_text, rolled_back
from tests.annotate.member_helpers import submit_batch
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def round_two(batch: Batch) -> str:
    return f"/api/batches/{batch.pk}/round-two/"


def reopen(batch: Batch) -> str:
    return f"/api/batches/{batch.pk}/reopen/"


@pytest.fixture
def submitted(batch: Batch, alice: Any, bob: Any) -> Batch:
    """Round 1 done by both annotators, alice with a span."""
    spans.create_span(batch.samples.order_by("position").first(), alice, round=1, start=0, end=4, labels=["Benign"])
    submit_batch(batch, alice)
    submit_batch(batch, bob)
    return batch


# --------------------------------------------------------------------------- round 2


def test_an_admin_opens_round_two_with_copies_of_the_round_one_spans(submitted: Batch, admin_user: Any,
                                                                     alice: Any) -> None:
    answer = api_json(login(admin_user), "post", round_two(submitted), {"reveal": "pseudonyms"})
    assert answer.status_code == 200
    assert answer.json() == {"batch": submitted.pk, "round": 2, "reveal": "pseudonyms", "annotators": ["alice", "bob"]}
    assert sorted(submitted.assignments.filter(round=2).values_list("annotator__username", flat=True)) == [
        "alice", "bob"]
    assert SpanAnnotation.objects.filter(annotator=alice, round=2).count() == 1
    submitted.refresh_from_db()
    assert submitted.reveal_names is False


def test_round_two_shows_names_unless_told_otherwise(submitted: Batch, admin_user: Any) -> None:
    answer = login(admin_user).post(round_two(submitted))  # no body at all
    assert answer.status_code == 200 and answer.json()["reveal"] == "names"
    submitted.refresh_from_db()
    assert submitted.reveal_names is True


def test_round_two_waits_for_every_round_one_submission_409(batch: Batch, admin_user: Any, alice: Any) -> None:
    submit_batch(batch, alice)
    answer = api_json(login(admin_user), "post", round_two(batch), {})
    assert answer.status_code == 409
    assert answer.json() == {"detail": "batch 'batch-1': waiting for round 1 from bob"}
    page = login(admin_user).post(f"/projects/demo/batches/{batch.pk}/round-two/", follow=True)
    assert "batch 'batch-1': waiting for round 1 from bob" in page_text(page)
    assert not Assignment.objects.filter(round=2).exists()


def test_round_two_opens_once(submitted: Batch, admin_user: Any) -> None:
    admin = login(admin_user)
    assert api_json(admin, "post", round_two(submitted), {}).status_code == 200
    again = api_json(admin, "post", round_two(submitted), {"reveal": "pseudonyms"})
    assert again.status_code == 409 and again.json()["detail"] == "batch 'batch-1': round 2 is already open"
    submitted.refresh_from_db()
    assert submitted.reveal_names is True and Assignment.objects.filter(round=2).count() == 2


def test_a_bad_reveal_or_a_stray_field_is_400_and_opens_nothing(submitted: Batch, admin_user: Any) -> None:
    admin = login(admin_user)
    assert list(api_json(admin, "post", round_two(submitted), {"reveal": "everyone"}).json()) == ["reveal"]
    assert list(api_json(admin, "post", round_two(submitted), {"confirm": True}).json()) == ["confirm"]
    assert not Assignment.objects.filter(round=2).exists()


# --------------------------------------------------------------------------- re-opening a round


def test_an_admin_reopens_a_round_with_a_reason_in_the_log(submitted: Batch, admin_user: Any, alice: Any) -> None:
    answer = api_json(login(admin_user), "post", reopen(submitted),
                      {"annotator": "alice", "round": 1, "reason": "alice asked to fix sample 1"})
    assert answer.status_code == 200
    entry = RoundReopening.objects.get()
    assert (entry.assignment.annotator, entry.reopened_by, entry.reason, entry.closed_at) == (
        alice, admin_user, "alice asked to fix sample 1", None)
    body = answer.json()
    assert {key: body[key] for key in ("batch", "round", "annotator", "status", "reopened", "reason", "reopened_by")} \
        == {"batch": submitted.pk, "round": 1, "annotator": "alice", "status": "assigned", "reopened": True,
            "reason": "alice asked to fix sample 1", "reopened_by": "adam"}
    # alice submits it again through the API's own batch route, which closes the log entry.
    again = api_json(login(alice), "post", f"/api/batches/{submitted.pk}/submit/", {"round": 1})
    assert again.status_code == 200 and again.json()["status"] == "submitted"
    entry.refresh_from_db()
    assert entry.closed_at is not None


@pytest.mark.parametrize(("body", "message"), [
    ({"annotator": "alice", "reason": "  "}, "Reason: say why this round is re-opened (it is kept in the log)."),
    ({"annotator": "alice", "reason": "x" * 2001}, "Reason: at most 2000 characters, got 2001."),
])
def test_a_reopening_needs_a_reason_400_in_the_pages_words(submitted: Batch, admin_user: Any,
                                                           body: dict[str, str], message: str) -> None:
    answer = api_json(login(admin_user), "post", reopen(submitted), body)
    assert answer.status_code == 400 and answer.json() == {"reason": [message]}
    assignment = Assignment.objects.get(batch=submitted, annotator__username="alice")
    page = login(admin_user).post(f"/projects/demo/assignments/{assignment.pk}/reopen/", {"reason": body["reason"]},
                                  follow=True)
    assert f"Not re-opened. {message}" in page_text(page)
    assert not RoundReopening.objects.exists() and not Assignment.objects.filter(reopened=True).exists()


def test_a_round_nobody_holds_is_400_on_annotator(submitted: Batch, admin_user: Any) -> None:
    admin = login(admin_user)
    for body in ({"annotator": "carol", "reason": "r"}, {"annotator": "alice", "round": 2, "reason": "r"}):
        answer = api_json(admin, "post", reopen(submitted), body)
        assert answer.status_code == 400 and list(answer.json()) == ["annotator"], body
    assert list(api_json(admin, "post", reopen(submitted), {}).json()) == ["annotator", "reason"]
    assert not RoundReopening.objects.exists()


def test_an_open_round_or_one_superseded_by_round_two_is_409(batch: Batch, admin_user: Any, alice: Any,
                                                             bob: Any) -> None:
    admin = login(admin_user)
    not_frozen = api_json(admin, "post", reopen(batch), {"annotator": "alice", "reason": "r"})
    assert not_frozen.status_code == 409
    assert not_frozen.json()["detail"] == "Round 1 of batch-1 is not frozen for alice."
    submit_batch(batch, alice)
    submit_batch(batch, bob)
    assert api_json(admin, "post", round_two(batch), {}).status_code == 200
    superseded = api_json(admin, "post", reopen(batch), {"annotator": "alice", "round": 1, "reason": "r"})
    assert superseded.status_code == 409 and superseded.json()["detail"].startswith("Round 2 of batch-1 is open")
    assert not RoundReopening.objects.exists()


# --------------------------------------------------------------------------- who may


def test_only_the_projects_admins_open_and_reopen_rounds(submitted: Batch, alice: Any, charlie: Any) -> None:
    auditor = make_user("audrey")
    Membership.objects.create(project=submitted.project, user=auditor, role=Membership.Role.AUDITOR)
    other = make_user("olga")  # an annotator of the project without this batch
    Membership.objects.create(project=submitted.project, user=other, role=Membership.Role.ANNOTATOR)
    body = {"annotator": "bob", "reason": "r"}
    for url in (round_two(submitted), reopen(submitted)):
        assert api_json(login(alice), "post", url, body).status_code == 403, url
        assert api_json(login(auditor), "post", url, body).status_code == 403, url
        assert api_json(login(other), "post", url, body).status_code == 404, url
        assert api_json(login(charlie), "post", url, body).status_code == 404, url
        assert api_json(login(charlie), "post", url, {"stray": 1}).status_code == 404, url  # access before body
        anonymous = api_json(Client(), "post", url, body)
        assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token", url
    assert not Assignment.objects.filter(round=2).exists() and not RoundReopening.objects.exists()


# --------------------------------------------------------------------------- the page and the API agree


@pytest.mark.parametrize("reveal", ["names", "pseudonyms"])
@pytest.mark.parametrize("ready", [True, False])
def test_the_page_and_the_api_open_round_two_alike(batch: Batch, admin_user: Any, alice: Any, bob: Any,
                                                   reveal: str, ready: bool) -> None:
    spans.create_span(batch.samples.order_by("position").first(), bob, round=1, start=0, end=4, labels=["Benign"])
    submit_batch(batch, alice)
    if ready:
        submit_batch(batch, bob)
    admin = login(admin_user)
    page, by_page = rolled_back(
        lambda: admin.post(f"/projects/demo/batches/{batch.pk}/round-two/", {"reveal": reveal}, follow=True),
        campaign_state)
    answer, by_api = rolled_back(lambda: api_json(admin, "post", round_two(batch), {"reveal": reveal}),
                                 campaign_state)
    assert by_api == by_page
    assert (answer.status_code == 200) == ready
    if ready:
        assert len(by_api["assignments"]) == 4 and by_api != campaign_state()
    else:
        assert answer.json()["detail"] in page_text(page)


@pytest.mark.parametrize("reason", ["sample 2 was misread", ""])
def test_the_page_and_the_api_reopen_alike(submitted: Batch, admin_user: Any, reason: str) -> None:
    assignment = Assignment.objects.get(batch=submitted, annotator__username="bob")
    admin = login(admin_user)
    page, by_page = rolled_back(
        lambda: admin.post(f"/projects/demo/assignments/{assignment.pk}/reopen/", {"reason": reason}, follow=True),
        campaign_state)
    answer, by_api = rolled_back(
        lambda: api_json(admin, "post", reopen(submitted), {"annotator": "bob", "reason": reason}), campaign_state)
    assert by_api == by_page
    if reason:
        assert answer.status_code == 200 and by_api["reopenings"][0][3:5] == ("adam", reason)
    else:
        assert answer.status_code == 400 and f"Not re-opened. {answer.json()['reason'][0]}" in page_text(page)
