"""Round 2 as the annotator reads it: which of the names (a pseudonym when the batch hides names) is their own, and
the others' round-1 work still shown, read-only, once they submitted round 2."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Batch, Sample
from annotate.services import rounds, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db

PAGE_DATA = '<script id="page-data" type="application/json">'


def page_data(user: Any, sample: Sample, round: int = 2) -> dict[str, Any]:
    html = login(user).get(f"/projects/{sample.project.slug}/samples/{sample.pk}/?round={round}").content.decode()
    start = html.index(PAGE_DATA) + len(PAGE_DATA)
    return json.loads(html[start : html.index("</script>", start)])


def open_round_two(batch: Batch, sample: Sample, alice: Any, bob: Any, *, reveal_names: bool) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=3, labels=["Unwanted.Intrinsic"])
    spans.create_span(sample, bob, round=1, start=4, end=9, labels=["Questionable"], note="bob's reason")
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    rounds.open_reconciliation_round(batch, reveal_names=reveal_names)


def test_each_annotator_is_told_which_pseudonym_is_theirs(batch: Batch, sample: Sample, alice: Any, bob: Any) -> None:
    open_round_two(batch, sample, alice, bob, reveal_names=False)
    for person, own, other in ((alice, "Annotator A", "Annotator B"), (bob, "Annotator B", "Annotator A")):
        for others in (login(person).get(f"/api/samples/{sample.pk}/others/").json(), page_data(person, sample)["others"]):
            assert others["you"] == own
            assert set(others["worst_labels"]) == {own, other}
            assert [span["annotator"] for span in others["spans"]] == [other]


def test_with_names_shown_you_is_the_username(batch: Batch, sample: Sample, alice: Any, bob: Any) -> None:
    open_round_two(batch, sample, alice, bob, reveal_names=True)
    assert login(alice).get(f"/api/samples/{sample.pk}/others/").json()["you"] == "alice"


def test_a_submitted_round_two_still_shows_the_others_read_only(
    batch: Batch, sample: Sample, alice: Any, bob: Any
) -> None:
    open_round_two(batch, sample, alice, bob, reveal_names=False)
    for each in batch.samples.all():
        spans.mark_sample_done(each, alice, round=2, done=True)  # the last one submits round 2: frozen
    data = page_data(alice, sample)
    assert data["can_edit"] is False and "You submitted round 2" in data["frozen"]
    others = data["others"]
    assert [(span["annotator"], span["note"]) for span in others["spans"]] == [("Annotator B", "bob's reason")]
    assert others["worst_labels"] == {"Annotator A": "Unwanted", "Annotator B": "Questionable"}
    assert others["disagree"] is True and others["you"] == "Annotator A"
    html = login(alice).get(f"/projects/{sample.project.slug}/samples/{sample.pk}/?round=2").content.decode()
    assert 'data-role="others"' in html


def test_round_one_and_other_viewers_still_get_no_others(
    batch: Batch, sample: Sample, alice: Any, bob: Any, admin_user: Any
) -> None:
    open_round_two(batch, sample, alice, bob, reveal_names=False)
    assert page_data(alice, sample, round=1)["others"] is None  # round 1, frozen: it was blind
    assert page_data(admin_user, sample)["others"] is None  # not an annotator of round 2: sees every span itself
