""""Save and next disputed" on the adjudication page: the next sample of the curation list that needs a gold label
(disputed without one, or a stale one), from the list's start again past its end, never the sample just saved; none
when no other sample waits (the page then goes back to the list)."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.services import curation, rounds, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def disputed(batch: Any, alice: Any, bob: Any) -> list[Any]:
    """Samples 0 and 2 disputed (alice marked a span, bob none), sample 1 agreed; round 1 submitted by both."""
    first, second, third = batch.samples.order_by("position")
    for sample in (first, third):
        spans.create_span(sample, alice, round=1, start=0, end=5, labels=["Questionable"])
    for person in (alice, bob):
        for sample in batch.samples.all():
            spans.mark_sample_done(sample, person, round=1, done=True)
    return [first, second, third]


def test_the_next_disputed_sample_follows_in_list_order_and_wraps(project: Any, disputed: list[Any]) -> None:
    first, second, third = disputed
    assert curation.next_needing_gold(project, 1, first) == third.pk
    assert curation.next_needing_gold(project, 1, third) == first.pk  # from the start again
    assert curation.next_needing_gold(project, 1, second) == first.pk  # an agreed sample: the first that waits


def test_save_and_next_opens_the_next_one_then_goes_back_to_the_list(
    project: Any, disputed: list[Any], admin_user: Any
) -> None:
    first, _, third = disputed
    client = login(admin_user)
    kept = rounds.submitted_spans(first, 1).get()
    response = client.post(f"/projects/demo/curation/{first.pk}/", {"round": "1", "spans": [kept.pk], "then": "next"})
    assert response.status_code == 302
    assert response.url == f"/projects/demo/curation/{third.pk}/?round=1"

    response = client.post(f"/projects/demo/curation/{third.pk}/", {"round": "1", "then": "next"}, follow=True)
    assert response.redirect_chain[-1][0] == f"/projects/demo/curation/?round=1&saved={third.pk}"
    assert "No other sample of round 1 waits for a gold label" in response.content.decode()

    plain = client.post(f"/projects/demo/curation/{first.pk}/", {"round": "1", "then": "list"})
    assert plain.url == f"/projects/demo/curation/?round=1&saved={first.pk}"
