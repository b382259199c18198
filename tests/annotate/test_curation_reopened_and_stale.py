"""Curation gaps a campaign lead found: a stale gold label is flagged in the JSONL export and the API, a batch
whose round is re-opened for someone offers nothing as agreed (and the page says why), the accept button agrees
with its number, and the API's 409 on a gold label speaks to an API caller, not of a form."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Assignment, Batch, GoldLabel, Membership
from annotate.services import export, freeze, rounds, spans
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def finish_round_one(batch: Batch, *people: Any) -> None:
    for person in people:
        for sample in batch.samples.all():
            spans.mark_sample_done(sample, person, round=1, done=True)


def curator(project: Any) -> Any:
    cora = make_user("cora")
    Membership.objects.create(project=project, user=cora, role=Membership.Role.CURATOR)
    return cora


def jsonl_records(project: Any) -> dict[str, dict[str, Any]]:
    lines = export.jsonl_lines(project, export.ExportOptions(format="jsonl"))
    return {record["sample_id"]: record for record in map(json.loads, "".join(lines).splitlines())}


# --------------------------------------------------------------------------- stale gold labels


def test_the_jsonl_export_and_the_api_say_when_a_gold_label_is_stale(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    first, second, *_ = batch.samples.order_by("position")
    span = spans.create_span(first, alice, round=1, start=0, end=7, labels=["Benign"])
    finish_round_one(batch, alice, bob)
    rounds.adjudicate_sample(first, admin_user, span_ids=[span.pk])
    rounds.adjudicate_sample(second, admin_user, span_ids=[])
    records = jsonl_records(batch.project)
    assert records[first.external_id]["adjudicated"]["label"] == "Benign"
    assert records[first.external_id]["gold_stale"] is False
    api = login(admin_user)
    assert api.get(f"/api/samples/{first.pk}/gold/").json()["stale"] is False

    freeze.reopen_round(Assignment.objects.get(batch=batch, annotator=alice, round=1), admin_user, "a label")
    spans.update_span(span, version=span.version, changes={"labels": ["Questionable"]})
    records = jsonl_records(batch.project)
    assert records[first.external_id]["gold_stale"] is True  # built from a span that changed afterwards
    assert records[second.external_id]["gold_stale"] is False
    third = batch.samples.order_by("position")[2]
    assert records[third.external_id]["adjudicated"] is None and records[third.external_id]["gold_stale"] is False
    gold = api.get(f"/api/samples/{first.pk}/gold/").json()
    assert gold["stale"] is True and gold["stale_reason"].startswith("spans changed on ")
    assert api.get(f"/api/samples/{second.pk}/gold/").json()["stale_reason"] is None


# --------------------------------------------------------------------------- a re-opened round


@pytest.fixture
def three_agree(batch: Batch, alice: Any, bob: Any) -> dict[str, Any]:
    """Alice, bob and carol submitted round 1; every sample is agreed (no spans: consistent)."""
    carol = make_user("carol")
    Membership.objects.create(project=batch.project, user=carol, role=Membership.Role.ANNOTATOR)
    Assignment.objects.create(batch=batch, annotator=carol)
    finish_round_one(batch, alice, bob, carol)
    return {"batch": batch, "carol": carol, "samples": batch.samples.count()}


def test_a_batch_with_a_reopened_round_offers_no_sample_as_agreed(three_agree: dict[str, Any], admin_user: Any) -> None:
    batch, carol = three_agree["batch"], three_agree["carol"]
    freeze.reopen_round(Assignment.objects.get(batch=batch, annotator=carol, round=1), admin_user, "re-check")
    # alice and bob still agree, but carol's round is not submitted again: nothing is decided yet.
    client = login(admin_user)
    html = client.get("/projects/demo/curation/").content.decode().replace("&#x27;", "'")
    assert "Accept 0 agreed samples" in html
    count = three_agree["samples"]
    assert (f"{count} samples wait for carol's re-opened round: not offered as agreed until carol submits it again."
            ) in html
    assert "waits for the re-opened round of carol" in html
    assert rounds.accept_agreed_samples(batch.project, admin_user) == 0
    assert not GoldLabel.objects.exists()

    freeze.submit_round_again(batch, carol, round=1)  # carol submits again: the samples are agreed once more
    html = client.get("/projects/demo/curation/").content.decode()
    assert f"Accept {count} agreed samples" in html and "re-opened round" not in html
    assert rounds.accept_agreed_samples(batch.project, admin_user) == count


def test_the_accept_button_and_its_message_agree_with_their_number(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    first, second, *rest = batch.samples.order_by("position")
    for sample in (first, *rest):  # all but the second disputed
        spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    finish_round_one(batch, alice, bob)
    client = login(admin_user)
    assert "Accept 1 agreed sample<" in client.get("/projects/demo/curation/").content.decode()
    done = client.post("/projects/demo/curation/accept-agreed/", {"round": "1"}, follow=True).content.decode()
    assert "Accepted 1 sample where every annotator agreed." in done


# --------------------------------------------------------------------------- the API's 409


def test_the_apis_gold_conflict_speaks_of_the_request_not_of_a_form(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    sample = batch.samples.order_by("position").first()
    benign = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    finish_round_one(batch, alice, bob)
    cora = curator(batch.project)
    url = f"/api/samples/{sample.pk}/gold/"
    assert login(cora).put(url, {"span_ids": [benign.pk], "base_decided_at": None},
                           content_type="application/json").status_code == 200
    refused = login(admin_user).put(url, {"span_ids": [], "base_decided_at": None}, content_type="application/json")
    assert refused.status_code == 409
    detail = refused.json()["detail"]
    assert detail.startswith("The gold label of sample 0 was saved by cora at ")
    assert "below" not in detail and "your choice" not in detail
    assert detail.endswith("nothing was saved. 'current' holds it (Benign): to replace it, PUT again with its "
                           "decided_at as base_decided_at.")
    assert refused.json()["current"]["stale"] is False
    # The page keeps its own words.
    page = login(admin_user).post(f"/projects/demo/curation/{sample.pk}/", {"round": "1", "spans": [],
                                                                            "base_decided_at": "none"})
    assert page.status_code == 409 and "your choice is below, not saved" in page.content.decode()
