"""The batch annotators page: assigning, unassigning and reassigning annotators of a batch's rounds."""

from __future__ import annotations

import html
from typing import Any

import pytest

from annotate.models import Assignment, Membership, SpanAnnotation
from annotate.services import stats
from tests.annotate.member_helpers import HTMX, give_work, submit_batch
from tests.conftest import login

pytestmark = pytest.mark.django_db


# --------------------------------------------------------------------------- the batch annotators page


def test_batch_page_lists_each_rounds_annotators_with_their_work(batch: Any, admin_user: Any, alice: Any) -> None:
    give_work(batch, alice)
    response = login(admin_user).get(f"/projects/demo/batches/{batch.pk}/annotators/")
    assert response.status_code == 200
    page = response.content.decode()
    row = page[page.index('data-annotator="alice"'):]
    row = row[: row.index("</tr>")]
    assert "<td>1 / 3</td>" in row and "<td>1</td>" in row
    assert 'data-annotator="bob"' in page
    fragment = login(admin_user).get(f"/projects/demo/batches/{batch.pk}/annotators/", **HTMX).content.decode()
    assert 'id="staffing"' in fragment and "<html" not in fragment


def test_admin_assigns_an_annotator_to_round_one(batch: Any, admin_user: Any, charlie: Any) -> None:
    Membership.objects.create(project=batch.project, user=charlie, role="annotator")
    response = login(admin_user).post(f"/projects/demo/batches/{batch.pk}/annotators/",
                                      {"annotator": str(charlie.pk)}, **HTMX)
    assert response.status_code == 200 and "charlie is assigned to round 1." in response.content.decode()
    assert Assignment.objects.filter(batch=batch, annotator=charlie, round=1, status="assigned").exists()


@pytest.mark.parametrize("who", ["outsider", "bob", "junk", ""])
def test_assigning_someone_who_is_not_a_free_annotator_changes_nothing(
    batch: Any, admin_user: Any, charlie: Any, bob: Any, who: str
) -> None:
    value = {"outsider": str(charlie.pk), "bob": str(bob.pk), "junk": "12x", "": ""}[who]
    before = Assignment.objects.count()
    response = login(admin_user).post(f"/projects/demo/batches/{batch.pk}/annotators/", {"annotator": value})
    assert response.status_code == 400
    expected = ("bob is already assigned to batch-1 round 1" if who == "bob"
                else "Annotator: choose one of the annotators of Demo")
    assert expected in response.content.decode()
    assert Assignment.objects.count() == before


def test_unassigning_an_annotator_without_work(batch: Any, admin_user: Any, alice: Any) -> None:
    assignment = batch.assignments.get(annotator=alice)
    response = login(admin_user).post(f"/projects/demo/assignments/{assignment.pk}/unassign/", **HTMX)
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert "alice is no longer assigned to round 1." in response.content.decode()
    assert not Assignment.objects.filter(pk=assignment.pk).exists()


def test_unassigning_someone_with_work_asks_first_and_keeps_the_spans(
    batch: Any, admin_user: Any, alice: Any
) -> None:
    give_work(batch, alice)
    assignment = batch.assignments.get(annotator=alice)
    sample = batch.samples.order_by("position").first()
    client = login(admin_user)
    asked = client.post(f"/projects/demo/assignments/{assignment.pk}/unassign/")
    assert asked.status_code == 409
    page = html.unescape(asked.content.decode())
    assert ("alice has 1 span and 1 sample marked done in batch-1 round 1. If you unassign them, that "
            "work stays stored (exports list it) but counts in no agreement, results or curation figure, and alice "
            "can no longer open the batch.") in page
    assert 'name="confirm" value="yes"' in page
    assert Assignment.objects.filter(pk=assignment.pk).exists()

    done = client.post(f"/projects/demo/assignments/{assignment.pk}/unassign/", {"confirm": "yes"})
    assert done.status_code == 200
    assert "Their 1 span and 1 sample marked done stay stored, out of the figures." in done.content.decode()
    assert not Assignment.objects.filter(pk=assignment.pk).exists()
    assert SpanAnnotation.objects.filter(annotator=alice).count() == 1
    assert login(alice).get(f"/projects/demo/samples/{sample.pk}/").status_code == 404
    # The figures' roster is the batch's submitters: bob, once he submits; never alice's kept span.
    submit_batch(batch, batch.assignments.get(annotator__username="bob").annotator)
    assert stats.batch_submitters(batch.project, 1) == {batch.pk: [batch.assignments.get().annotator_id]}
    first_generator = sample.generator  # alice's Benign span was on this sample; bob marked it done with none
    assert stats.worst_label_distribution(batch.project, 1)[first_generator] == {"n": 1, "C": 1, "B": 0, "Q": 0, "U": 0}


def test_a_submitted_round_is_not_unassigned_without_reopening(batch: Any, admin_user: Any, alice: Any) -> None:
    submit_batch(batch, alice)
    assignment = batch.assignments.get(annotator=alice)
    response = login(admin_user).post(f"/projects/demo/assignments/{assignment.pk}/unassign/", {"confirm": "yes"})
    assert response.status_code == 400
    assert ("alice submitted batch-1 round 1; re-open the round before you unassign them"
            in response.content.decode())
    assert Assignment.objects.get(pk=assignment.pk).status == "submitted"


def test_reassigning_moves_the_duty_to_another_annotator(batch: Any, admin_user: Any, alice: Any,
                                                         charlie: Any) -> None:
    Membership.objects.create(project=batch.project, user=charlie, role="annotator")
    give_work(batch, alice)
    assignment = batch.assignments.get(annotator=alice)
    client = login(admin_user)
    asked = client.post(f"/projects/demo/assignments/{assignment.pk}/reassign/", {"to": str(charlie.pk)}, **HTMX)
    assert asked.status_code == 409 and "<html" not in asked.content.decode()
    assert f'name="to" value="{charlie.pk}"' in asked.content.decode()
    assert not Assignment.objects.filter(annotator=charlie).exists()

    done = client.post(f"/projects/demo/assignments/{assignment.pk}/reassign/",
                       {"to": str(charlie.pk), "confirm": "yes"})
    assert done.status_code == 200 and "Round 1 moved from alice to charlie." in done.content.decode()
    assert not Assignment.objects.filter(annotator=alice).exists()
    moved = Assignment.objects.get(annotator=charlie)
    assert (moved.batch_id, moved.round, moved.status) == (batch.pk, 1, "assigned")
    assert SpanAnnotation.objects.filter(annotator=alice).count() == 1
    assert not SpanAnnotation.objects.filter(annotator=charlie).exists()


@pytest.mark.parametrize(
    ("to", "message"),
    [
        ("outsider", "Annotator: choose one of the annotators of Demo"),
        ("bob", "bob is already assigned to batch-1 round 1"),
        ("alice", "alice already holds this assignment"),
    ],
)
def test_reassigning_to_someone_unfit_changes_nothing(
    batch: Any, admin_user: Any, alice: Any, bob: Any, charlie: Any, to: str, message: str
) -> None:
    target = {"outsider": charlie, "bob": bob, "alice": alice}[to]
    assignment = batch.assignments.get(annotator=alice)
    response = login(admin_user).post(f"/projects/demo/assignments/{assignment.pk}/reassign/",
                                      {"to": str(target.pk), "confirm": "yes"})
    assert response.status_code == 400 and message in response.content.decode()
    assert set(batch.assignments.values_list("annotator__username", flat=True)) == {"alice", "bob"}


def test_round_two_cannot_be_reassigned_and_round_one_waits_for_it(batch: Any, admin_user: Any, alice: Any,
                                                                  bob: Any) -> None:
    submit_batch(batch, alice)
    submit_batch(batch, bob)
    from annotate.services import rounds

    rounds.open_reconciliation_round(batch)
    second = Assignment.objects.get(annotator=alice, round=2)
    client = login(admin_user)
    response = client.post(f"/projects/demo/assignments/{second.pk}/reassign/", {"to": str(bob.pk)})
    assert response.status_code == 400
    assert "Round 2 reconciles each annotator&#x27;s own round-1 spans" in response.content.decode()

    first = Assignment.objects.get(annotator=alice, round=1)
    Assignment.objects.filter(pk=first.pk).update(status="assigned", reopened=True)  # as if re-opened
    refused = client.post(f"/projects/demo/assignments/{first.pk}/unassign/", {"confirm": "yes"})
    assert refused.status_code == 400
    assert "unassign them from round 2 first" in refused.content.decode()
    assert client.post(f"/projects/demo/assignments/{second.pk}/unassign/").status_code == 200
    assert not Assignment.objects.filter(pk=second.pk).exists()
