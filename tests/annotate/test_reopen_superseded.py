"""Round 1 of a batch cannot be re-opened once round 2 of that batch is open: round 2 began from its spans."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Assignment, Batch, RoundReopening, SpanAnnotation
from annotate.services import freeze, rounds, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


def finish(batch: Batch, person: Any, round: int = 1) -> None:
    for sample in batch.samples.all():
        spans.mark_sample_done(sample, person, round=round, done=True)


@pytest.fixture
def round_two_open(batch: Batch, sample: Any, alice: Any, bob: Any) -> Batch:
    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"], note="seeded")
    finish(batch, alice)
    finish(batch, bob)
    rounds.open_reconciliation_round(batch)
    return batch


def state(batch: Batch) -> list[tuple[Any, ...]]:
    return list(
        Assignment.objects.filter(batch=batch).order_by("pk").values_list("pk", "round", "status", "reopened",
                                                                           "submitted_at")
    )


def test_the_service_refuses_and_changes_nothing(round_two_open: Batch, alice: Any, admin_user: Any) -> None:
    before = state(round_two_open)
    assignment = Assignment.objects.get(batch=round_two_open, annotator=alice, round=1)
    with pytest.raises(freeze.ReopenError) as refused:
        freeze.reopen_round(assignment, admin_user, "alice wants to fix a slip")
    assert str(refused.value) == (
        "Round 2 of batch-1 is open, so round 1 is frozen for everyone and cannot be re-opened (round 2 began "
        "from copies of its spans). Nothing was changed: alice's changes belong in round 2."
    )
    assert state(round_two_open) == before
    assert not RoundReopening.objects.exists()


def test_the_page_refuses_with_the_message_and_offers_no_re_open_control(
    round_two_open: Batch, alice: Any, admin_user: Any
) -> None:
    client = login(admin_user)
    before = state(round_two_open)
    assignment = Assignment.objects.get(batch=round_two_open, annotator=alice, round=1)
    page = client.post(reverse("reopen-round", args=["demo", assignment.pk]), {"reason": "a slip"}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "Not re-opened. Round 2 of batch-1 is open, so round 1 is frozen for everyone" in html
    assert state(round_two_open) == before and not RoundReopening.objects.exists()
    # Round 1's spans are still exactly the ones round 2 was seeded from.
    original = SpanAnnotation.objects.get(round=1)
    assert SpanAnnotation.objects.get(round=2).origin_id == original.pk and original.note == "seeded"

    # The project page offers re-opening nowhere (round 1: superseded; round 2: not submitted yet) ...
    project_page = client.get(reverse("project", args=["demo"]))
    people = project_page.context["batches"][0]["people"]
    assert {(p["assignment"].annotator.username, p["assignment"].round): (p["frozen"], p["reopenable"])
            for p in people} == {("alice", 1): (True, False), ("bob", 1): (True, False),
                                 ("alice", 2): (False, False), ("bob", 2): (False, False)}
    assert 'data-role="reopen"' not in project_page.content.decode()
    # ... nor does the batch's annotators page, which says why.
    staffing = client.get(reverse("batch-annotators", args=["demo", round_two_open.pk])).content.decode()
    assert reverse("reopen-round", args=["demo", assignment.pk]) not in staffing
    assert staffing.count('data-role="frozen-for-everyone"') == 2
    assert "frozen: round 2 is open" in staffing


def test_round_two_itself_can_still_be_re_opened_once_submitted(
    round_two_open: Batch, alice: Any, admin_user: Any
) -> None:
    finish(round_two_open, alice, round=2)
    assignment = Assignment.objects.get(batch=round_two_open, annotator=alice, round=2)
    project_page = login(admin_user).get(reverse("project", args=["demo"]))
    reopenable = {(p["assignment"].annotator.username, p["assignment"].round): p["reopenable"]
                  for p in project_page.context["batches"][0]["people"]}
    assert reopenable[("alice", 2)] is True and reopenable[("alice", 1)] is False
    freeze.reopen_round(assignment, admin_user, "a slip in round 2")
    assignment.refresh_from_db()
    assert assignment.reopened and assignment.status == Assignment.Status.ASSIGNED


def test_before_round_two_round_one_still_re_opens(batch: Batch, alice: Any, admin_user: Any) -> None:
    finish(batch, alice)
    assignment = Assignment.objects.get(batch=batch, annotator=alice, round=1)
    page = login(admin_user).get(reverse("project", args=["demo"]))
    assert 'data-role="reopen"' in page.content.decode()
    freeze.reopen_round(assignment, admin_user, "a slip")
    assert RoundReopening.objects.filter(assignment=assignment).exists()
