"""Two curators on the same sample: a gold label saved after the curator's page or GET showed another one (or none)
is refused, saying who changed it and when, with the current gold label shown (before, it was overwritten unseen).

The PostgreSQL test races two curators for real; run it with scripts/with-postgres.sh (``make test`` does).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotate.models import Batch, GoldLabel, Membership, Project, Sample, SpanAnnotation
from annotate.services import rounds, spans
from tests.conftest import login, make_user, needs_postgres
from tests.races import race, slowed


def curator(project: Project, name: str = "cora") -> Any:
    user = make_user(name)
    Membership.objects.create(project=project, user=user, role=Membership.Role.CURATOR)
    return user


def two_opinions(batch: Batch, alice: Any, bob: Any) -> tuple[Sample, SpanAnnotation, SpanAnnotation]:
    """The first sample with alice's Unwanted span and bob's Benign one, round 1 submitted by both."""
    sample = batch.samples.order_by("position").first()
    unwanted = spans.create_span(sample, alice, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"])
    benign = spans.create_span(sample, bob, round=1, start=0, end=7, labels=["Benign"])
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    return sample, unwanted, benign


def stamp_of(html: str) -> str:
    found = re.search(r'<input type="hidden" name="base_decided_at" value="([^"]*)">', html)
    assert found, "the adjudication form carries no base_decided_at"
    return found.group(1)


def ticked(html: str) -> set[int]:
    return {int(pk) for pk in re.findall(r'name="spans" value="(\d+)" checked', html)}


@pytest.mark.django_db
def test_a_gold_label_saved_after_the_page_opened_refuses_the_second_curator(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    sample, unwanted, benign = two_opinions(batch, alice, bob)
    cora = curator(batch.project)
    url = f"/projects/demo/curation/{sample.pk}/"
    opened = login(admin_user).get(url).content.decode()
    assert stamp_of(opened) == "none"
    assert login(cora).post(url, {"round": "1", "spans": [str(benign.pk)],
                                  "base_decided_at": stamp_of(login(cora).get(url).content.decode())}).status_code == 302
    theirs = GoldLabel.objects.get(sample=sample)

    response = login(admin_user).post(url, {"round": "1", "spans": [str(unwanted.pk)], "base_decided_at": "none"})
    assert response.status_code == 409
    html = response.content.decode()
    when = f"{timezone.localtime(theirs.decided_at):%Y-%m-%d %H:%M}"
    assert (f"The gold label of sample 0 was saved by cora at {when} while you had it open (you saw no gold "
            "label); your choice is below, not saved: compare it with the current gold label (Benign) and save "
            "again.") in html
    assert "Current gold label: <strong>Benign</strong>" in html and "cora" in html  # the current gold, shown
    assert re.search(rf'value="{benign.pk}"[^>]*>.*?data-role="in-gold"', html, re.S)
    assert ticked(html) == {unwanted.pk}  # the refused choice stays on the form
    assert stamp_of(html) == theirs.decided_at.isoformat()
    gold = GoldLabel.objects.get(sample=sample)
    assert (gold.category, gold.decided_by, gold.decided_at) == ("B", cora, theirs.decided_at)

    # Having seen cora's label, saving again is the curator's decision.
    assert login(admin_user).post(url, {"round": "1", "spans": [str(unwanted.pk)],
                                        "base_decided_at": stamp_of(html)}).status_code == 302
    gold.refresh_from_db()
    assert (gold.category, gold.decided_by) == ("U", admin_user)


@pytest.mark.django_db
def test_a_gold_label_changed_since_it_was_shown_is_refused_too(batch: Batch, alice: Any, bob: Any,
                                                                admin_user: Any) -> None:
    sample, unwanted, benign = two_opinions(batch, alice, bob)
    cora = curator(batch.project)
    first = rounds.adjudicate_sample(sample, admin_user, span_ids=[benign.pk], seen=rounds.NO_GOLD)
    url = f"/projects/demo/curation/{sample.pk}/"
    shown = stamp_of(login(admin_user).get(url).content.decode())
    assert shown == first.decided_at.isoformat()
    rounds.adjudicate_sample(sample, cora, span_ids=[unwanted.pk], seen=rounds.read_gold_stamp(shown))

    response = login(admin_user).post(url, {"round": "1", "spans": [], "base_decided_at": shown})
    assert response.status_code == 409
    html = response.content.decode()
    assert "was saved by cora at " in html and (
        f"(you saw the gold label of {timezone.localtime(first.decided_at):%Y-%m-%d %H:%M})") in html
    assert GoldLabel.objects.get(sample=sample).category == "U"


@pytest.mark.django_db
def test_a_garbled_stamp_saves_nothing(batch: Batch, alice: Any, bob: Any, admin_user: Any) -> None:
    sample, unwanted, _ = two_opinions(batch, alice, bob)
    response = login(admin_user).post(f"/projects/demo/curation/{sample.pk}/",
                                      {"round": "1", "spans": [str(unwanted.pk)], "base_decided_at": "yesterday"})
    html = response.content.decode()
    assert "base_decided_at: &#x27;yesterday&#x27; is neither &#x27;none&#x27; nor a time" in html
    assert ticked(html) == {unwanted.pk}
    assert not GoldLabel.objects.exists()


@pytest.mark.django_db
def test_the_api_answers_409_with_the_current_gold_label(batch: Batch, alice: Any, bob: Any,
                                                         admin_user: Any) -> None:
    sample, unwanted, benign = two_opinions(batch, alice, bob)
    cora = curator(batch.project)
    url = f"/api/samples/{sample.pk}/gold/"
    mine, theirs = login(admin_user), login(cora)
    assert mine.get(url).status_code == 404  # no gold label: the PUT says so with null
    saved = theirs.put(url, {"span_ids": [benign.pk], "base_decided_at": None}, content_type="application/json")
    assert saved.status_code == 200

    refused = mine.put(url, {"span_ids": [unwanted.pk], "base_decided_at": None}, content_type="application/json")
    assert refused.status_code == 409
    body = refused.json()
    assert body["detail"].startswith("The gold label of sample 0 was saved by cora at ")
    assert "(you saw no gold label)" in body["detail"]
    assert body["current"] == saved.json()  # the gold label as it is now
    stale = mine.put(url, {"span_ids": [unwanted.pk], "base_decided_at": "2020-01-01T00:00:00Z"},
                     content_type="application/json")
    assert stale.status_code == 409 and stale.json()["current"]["decided_by"] == "cora"
    assert GoldLabel.objects.get(sample=sample).category == "B"

    current = mine.get(url).json()
    again = mine.put(url, {"span_ids": [unwanted.pk], "base_decided_at": current["decided_at"]},
                     content_type="application/json")
    assert again.status_code == 200 and again.json()["category"] == "U"
    bad = mine.put(url, {"span_ids": [], "base_decided_at": "soon"}, content_type="application/json")
    assert bad.status_code == 400 and "base_decided_at" in bad.json()
    assert GoldLabel.objects.get(sample=sample).category == "U"


# --- PostgreSQL: two curators racing ----------------------------------------------------------------------------


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_curators_saving_the_first_gold_label_at_once_keep_one(batch: Batch, alice: Any, bob: Any,
                                                                   admin_user: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    sample, unwanted, benign = two_opinions(batch, alice, bob)
    cora = curator(batch.project)
    # Between the check of the gold label and its write: without the sample's lock both curators would pass.
    slowed(monkeypatch, rounds, "label_categories")

    def adjudicate(user_id: int, span_id: int) -> str:
        user = get_user_model().objects.get(pk=user_id)
        gold = rounds.adjudicate_sample(Sample.objects.get(pk=sample.pk), user, span_ids=[span_id],
                                        seen=rounds.NO_GOLD)
        return gold.category

    outcome = race([lambda user=user, span=span: adjudicate(user.pk, span.pk)
                    for user, span in [(admin_user, unwanted), (cora, benign)]], rounds.GoldConflict)
    saved, refused = outcome.done, outcome.refused
    assert len(saved) == 1 and len(refused) == 1 and "(you saw no gold label)" in refused[0]
    assert GoldLabel.objects.get(sample=sample).category == saved[0]
