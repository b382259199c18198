from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Assignment, GoldLabel, Sample, SpanAnnotation
from annotate.services import rounds, spans
from annotate.services.pages import annotation_page_data
from tests.conftest import login

pytestmark = pytest.mark.django_db


def finish_round_one(batch: Any, *people: Any) -> None:
    for person in people:
        for sample in batch.samples.all():
            spans.mark_sample_done(sample, person, round=1, done=True)


def test_round_two_waits_for_every_round_one_submission(batch: Any, alice: Any, bob: Any) -> None:
    finish_round_one(batch, alice)
    ready, why = rounds.reconciliation_ready(batch)
    assert not ready and "waiting for round 1 from bob" in why
    with pytest.raises(rounds.RoundError, match="waiting for round 1 from bob"):
        rounds.open_reconciliation_round(batch)
    assert not Assignment.objects.filter(round=2).exists()


def test_round_two_copies_spans_and_shows_the_others(batch: Any, sample: Any, alice: Any, bob: Any) -> None:
    alice_span = spans.create_span(sample, alice, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"], note="a")
    spans.create_span(sample, bob, round=1, start=0, end=7, labels=["Benign"], note="b")
    finish_round_one(batch, alice, bob)
    rounds.open_reconciliation_round(batch, reveal_names=False)
    sample = Sample.objects.get(pk=sample.pk)  # as a new request reads it
    copy = SpanAnnotation.objects.get(round=2, annotator=alice)
    assert copy.origin == alice_span and (copy.start, copy.end, copy.note) == (51, 61, "a")
    data = annotation_page_data(sample, alice, "annotator", None)
    assert data["round"] == 2 and data["can_edit"]
    assert [s["id"] for s in data["spans"]] == [copy.pk]
    others = data["others"]
    assert [o["text"] for o in others["spans"]] == [sample.summary[0:7]]
    assert others["spans"][0]["annotator"] in {"Annotator A", "Annotator B"}
    assert "bob" not in json.dumps(others)
    assert others["disagree"] is True and not others["spans"][0]["agrees"]
    # round-2 edits are stored apart from round 1
    spans.update_span(copy, version=1, changes={"labels": ["Benign"], "start": 0, "end": 9})
    assert SpanAnnotation.objects.get(pk=alice_span.pk).labels == ["Unwanted", "Unwanted.Intrinsic"]
    data = annotation_page_data(sample, alice, "annotator", 2)
    assert data["others"]["spans"][0]["agrees"] is True
    # round 1 stays blind
    assert annotation_page_data(sample, alice, "annotator", 1)["others"] is None
    with pytest.raises(rounds.RoundError, match="already open"):
        rounds.open_reconciliation_round(batch)


def test_admin_opens_round_two_from_the_project_page(batch: Any, alice: Any, bob: Any, admin_user: Any) -> None:
    finish_round_one(batch, alice, bob)
    client = login(admin_user)
    assert 'data-role="open-round-two"' in client.get("/projects/demo/").content.decode()
    assert login(alice).post(f"/projects/demo/batches/{batch.pk}/round-two/").status_code == 403
    client.post(f"/projects/demo/batches/{batch.pk}/round-two/", {"reveal": "names"})
    assert Assignment.objects.filter(batch=batch, round=2).count() == 2
    home = login(alice).get("/").content.decode()
    assert "?round=2" in home


def test_adjudication_and_bulk_acceptance(batch: Any, alice: Any, bob: Any, admin_user: Any, tmp_path: Path) -> None:
    first, second, third = list(batch.samples.order_by("position"))
    disputed = spans.create_span(first, alice, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"])
    spans.create_span(first, bob, round=1, start=0, end=7, labels=["Benign"])
    spans.create_span(second, alice, round=1, start=0, end=5, labels=["Questionable"])
    spans.create_span(second, bob, round=1, start=2, end=9, labels=["Questionable"])
    finish_round_one(batch, alice, bob)  # third: both consistent
    client = login(admin_user)
    page = client.get("/projects/demo/curation/").content.decode()
    assert "Accept 2 agreed samples" in page and "disputed" in page
    client.post("/projects/demo/curation/accept-agreed/", {"round": "1"})
    gold = {g.sample_id: g for g in GoldLabel.objects.all()}
    assert set(gold) == {second.pk, third.pk}
    assert gold[second.pk].category == "Q" and len(gold[second.pk].spans) == 2 and gold[third.pk].category == "C"
    client.post(f"/projects/demo/curation/{first.pk}/", {"round": "1", "spans": [str(disputed.pk)]})
    first_gold = GoldLabel.objects.get(sample=first)
    assert first_gold.category == "U" and first_gold.decided_by == admin_user and first_gold.method == "manual"
    assert login(alice).get("/projects/demo/curation/").status_code == 403
    bad = client.post(f"/projects/demo/curation/{first.pk}/", {"round": "1", "spans": ["999999"]}, follow=True)
    assert "are not round-1 spans of this sample" in bad.content.decode()
    out = tmp_path / "x.jsonl"
    call_command("export", "--project", "demo", "--format", "jsonl", "--out", str(out))
    records = {r["sample_id"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records[first.external_id]["adjudicated"]["label"] == "Unwanted"
    assert records[third.external_id]["adjudicated"] == {"label": "Consistent", "round": 1, "method": "bulk",
                                                         "spans": []}


def test_api_others_and_gold(batch: Any, sample: Any, alice: Any, bob: Any, admin_user: Any) -> None:
    bob_span = spans.create_span(sample, bob, round=1, start=0, end=7, labels=["Benign"])
    assert login(alice).get(f"/api/samples/{sample.pk}/others/").status_code == 403  # round 1: blind
    finish_round_one(batch, alice, bob)
    rounds.open_reconciliation_round(batch)
    others = login(alice).get(f"/api/samples/{sample.pk}/others/").json()
    assert [s["annotator"] for s in others["spans"]] == ["bob"] and others["worst_labels"] == {
        "alice": "Consistent", "bob": "Benign"}
    admin = login(admin_user)
    assert admin.get(f"/api/samples/{sample.pk}/gold/").status_code == 404
    response = admin.put(f"/api/samples/{sample.pk}/gold/", {"span_ids": [bob_span.pk]},
                         content_type="application/json")
    assert response.status_code == 200 and response.json()["category"] == "B"
    assert login(alice).get(f"/api/samples/{sample.pk}/gold/").status_code == 403
    denied = login(alice).put(f"/api/samples/{sample.pk}/gold/", {"span_ids": []}, content_type="application/json")
    assert denied.status_code == 403
    bad = admin.put(f"/api/samples/{sample.pk}/gold/", {"span_ids": [123456]}, content_type="application/json")
    assert bad.status_code == 400 and "span_ids" in bad.json()
