"""Round 2 and curation show only the round-1 work of the batch's submitters.

An annotator who was unassigned, or whose round was reassigned to someone else, keeps their spans stored (exports
list them), but those spans count in no agreement, results or curation figure (README, "Unassigning and
reassigning"): round 2 must not show them to the others, with their notes, nor may a curator build a gold label
from them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Assignment, GoldLabel, Membership, Sample, SpanAnnotation
from annotate.services import spans
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db

BOB_NOTE = "bob's round-1 note: the date is invented"
PAGE_DATA = '<script id="page-data" type="application/json">'


@pytest.fixture
def dave(project: Any) -> Any:
    user = make_user("dave")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
    return user


@pytest.fixture
def curator(project: Any) -> Any:
    user = make_user("cora")
    Membership.objects.create(project=project, user=user, role=Membership.Role.CURATOR)
    return user


def finish_round_one(batch: Any, *people: Any) -> None:
    for person in people:
        for sample in batch.samples.all():
            spans.mark_sample_done(sample, person, round=1, done=True)
    assert set(
        Assignment.objects.filter(batch=batch, round=1, status=Assignment.Status.SUBMITTED).values_list(
            "annotator__username", flat=True)
    ) == {person.username for person in people}


def bobs_span(sample: Sample, bob: Any) -> SpanAnnotation:
    """Bob's unsubmitted round-1 work: an Unwanted span with a note, on the summary's first word."""
    return spans.create_span(sample, bob, round=1, start=0, end=3, labels=["Unwanted.Intrinsic"], note=BOB_NOTE)


def take_bob_away(how: str, batch: Any, bob: Any, dave: Any, admin_user: Any) -> None:
    """Bob's round 1 goes to dave (reassign), or bob leaves it with dave already on the batch (unassign)."""
    admin = login(admin_user)
    bobs = Assignment.objects.get(batch=batch, annotator=bob, round=1)
    if how == "reassign":
        answer = admin.post(f"/projects/demo/assignments/{bobs.pk}/reassign/", {"to": dave.pk, "confirm": "yes"})
    else:
        Assignment.objects.create(batch=batch, annotator=dave, round=1)
        answer = admin.post(f"/projects/demo/assignments/{bobs.pk}/unassign/", {"confirm": "yes"})
    assert answer.status_code == 200
    assert not Assignment.objects.filter(batch=batch, annotator=bob).exists()


def open_round_two(batch: Any, admin_user: Any) -> None:
    answer = login(admin_user).post(f"/api/batches/{batch.pk}/round-two/", {"reveal": "names"},
                                    content_type="application/json")
    assert answer.status_code in (200, 201), answer.content
    assert set(Assignment.objects.filter(batch=batch, round=2).values_list("annotator__username", flat=True)) == {
        "alice", "dave"}


def page_others(client: Any, sample: Sample) -> dict[str, Any]:
    html = client.get(f"/projects/demo/samples/{sample.pk}/?round=2").content.decode()
    start = html.index(PAGE_DATA) + len(PAGE_DATA)
    return json.loads(html[start : html.index("</script>", start)])["others"]


@pytest.mark.parametrize("how", ["reassign", "unassign"])
def test_round_two_shows_no_span_of_an_annotator_taken_off_round_one(
    how: str, batch: Any, sample: Sample, alice: Any, bob: Any, dave: Any, admin_user: Any
) -> None:
    bobs_span(sample, bob)
    take_bob_away(how, batch, bob, dave, admin_user)
    # Alice marks the same words Unwanted in round 1: in round 2 her copy would "agree" with bob's span.
    spans.create_span(sample, alice, round=1, start=0, end=3, labels=["Unwanted.Intrinsic"], note="alice")
    spans.create_span(sample, dave, round=1, start=4, end=9, labels=["Benign"], note="dave's note")
    finish_round_one(batch, alice, dave)
    open_round_two(batch, admin_user)
    alice_client = login(alice)
    for others in (alice_client.get(f"/api/samples/{sample.pk}/others/").json(), page_others(alice_client, sample)):
        assert [(s["annotator"], s["note"]) for s in others["spans"]] == [("dave", "dave's note")]
        assert others["worst_labels"] == {"alice": "Unwanted", "dave": "Benign"}
        assert BOB_NOTE not in json.dumps(others) and "?" not in [s["annotator"] for s in others["spans"]]
        assert not any(s["agrees"] for s in others["spans"])
    # Bob's span stays stored under his name.
    assert SpanAnnotation.objects.filter(annotator=bob, round=1, note=BOB_NOTE).count() == 1


@pytest.mark.parametrize("how", ["reassign", "unassign"])
def test_curation_lists_and_takes_no_span_of_an_annotator_taken_off_the_round(
    how: str, batch: Any, sample: Sample, alice: Any, bob: Any, dave: Any, admin_user: Any, curator: Any
) -> None:
    removed = bobs_span(sample, bob)
    take_bob_away(how, batch, bob, dave, admin_user)
    kept = spans.create_span(sample, alice, round=1, start=4, end=9, labels=["Benign"], note="alice's note")
    finish_round_one(batch, alice, dave)
    client = login(curator)
    page = client.get(f"/projects/demo/curation/{sample.pk}/?round=1")
    html = page.content.decode()
    assert page.status_code == 200 and f'name="spans" value="{kept.pk}"' in html and "alice&#x27;s note" in html
    assert f'name="spans" value="{removed.pk}"' not in html and "invented" not in html
    # Posting bob's span id anyway (an old form, a script) is refused, and nothing is saved.
    refused = client.post(f"/projects/demo/curation/{sample.pk}/", {"round": "1", "spans": [str(removed.pk)]},
                          follow=True).content.decode()
    assert f"spans: [{removed.pk}] are round-1 spans of this sample by someone who has not submitted" in refused
    answer = client.put(f"/api/samples/{sample.pk}/gold/", {"span_ids": [removed.pk, kept.pk]},
                        content_type="application/json")
    assert answer.status_code == 400 and "has not submitted" in json.dumps(answer.json())
    assert not GoldLabel.objects.exists()
    saved = client.put(f"/api/samples/{sample.pk}/gold/", {"span_ids": [kept.pk]}, content_type="application/json")
    assert saved.status_code == 200 and saved.json()["category"] == "B"


def test_an_unknown_span_id_is_still_named_as_not_of_this_sample(
    batch: Any, sample: Sample, alice: Any, bob: Any, curator: Any
) -> None:
    finish_round_one(batch, alice, bob)
    answer = login(curator).put(f"/api/samples/{sample.pk}/gold/", {"span_ids": [999999]},
                                content_type="application/json")
    assert answer.status_code == 400 and "spans: [999999] are not round-1 spans of this sample" in json.dumps(
        answer.json())
