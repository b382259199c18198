"""Accepting agreed samples in bulk: every rule of the one-by-one version, written with a few queries."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, Batch, GoldLabel, Passage, Project, Sample, SpanAnnotation
from annotate.services import rounds
from tests.conftest import SOURCE, login
from tests.queries import counted

pytestmark = pytest.mark.django_db


def make_batch(project: Project, name: str, size: int, people: list[Any], *, round: int = 1) -> list[Sample]:
    passage = Passage.objects.get_or_create(project=project, external_id="p", defaults={"text": SOURCE})[0]
    batch = Batch.objects.create(project=project, name=name)
    samples = [Sample.objects.create(project=project, passage=passage, batch=batch, position=index,
                                     external_id=f"{name}-{index}", summary="Twelve words of summary text here.")
               for index in range(size)]
    for person in people:
        Assignment.objects.create(batch=batch, annotator=person, round=round, status=Assignment.Status.SUBMITTED)
    return samples


def span(sample: Sample, person: Any, start: int, end: int, labels: list[str], *, round: int = 1,
         note: str = "") -> SpanAnnotation:
    return SpanAnnotation.objects.create(sample=sample, annotator=person, round=round, start=start, end=end,
                                         text=sample.summary[start:end], labels=labels, note=note,
                                         imported_fields={"kept": "x" * 50})


def test_agreed_samples_get_bulk_gold_labels_with_their_distinct_spans(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rounds, "SAMPLES_PER_QUERY", 2)  # several reads, so their boundaries are crossed
    agreed, consistent, disputed, decided, twice = make_batch(project, "b", 5, [alice, bob])
    # The same (start, end, labels) from both: one copy in the gold label, the one with the lower id.
    earlier = span(agreed, bob, 0, 6, ["Benign"], note="bob's")
    later = span(agreed, alice, 0, 6, ["Benign"], note="alice's")
    other = span(agreed, alice, 13, 18, ["Benign"])
    span(twice, alice, 7, 12, ["Unwanted.Intrinsic"])
    span(twice, bob, 2, 9, ["Unwanted", "Unwanted.Extrinsic"])
    span(disputed, alice, 0, 6, ["Benign"])
    span(decided, alice, 0, 6, ["Benign"])
    span(decided, bob, 0, 6, ["Benign"])
    manual = rounds.adjudicate_sample(decided, admin_user, span_ids=[])
    assert rounds.accept_agreed_samples(project, admin_user) == 3
    gold = {label.sample_id: label for label in GoldLabel.objects.all()}
    assert set(gold) == {agreed.pk, consistent.pk, twice.pk, decided.pk}
    assert gold[decided.pk].method == "manual" and gold[decided.pk].decided_at == manual.decided_at
    assert all(gold[pk].method == "bulk" and gold[pk].decided_by == admin_user and gold[pk].round == 1
               for pk in (agreed.pk, consistent.pk, twice.pk))
    assert (gold[agreed.pk].category, gold[consistent.pk].category, gold[twice.pk].category) == ("B", "C", "U")
    assert gold[agreed.pk].spans == [
        {"start": 0, "end": 6, "text": agreed.summary[0:6], "labels": ["Benign"], "note": "bob's",
         "source_start": None, "source_end": None, "from_span": earlier.pk},
        {"start": 13, "end": 18, "text": agreed.summary[13:18], "labels": ["Benign"], "note": "",
         "source_start": None, "source_end": None, "from_span": other.pk},
    ]
    assert [s["start"] for s in gold[twice.pk].spans] == [2, 7] and gold[consistent.pk].spans == []
    assert later.pk not in {s["from_span"] for s in gold[agreed.pk].spans}
    # A second acceptance finds nothing new and writes nothing.
    assert rounds.accept_agreed_samples(project, admin_user) == 0
    assert GoldLabel.objects.count() == 4


def test_a_sample_with_one_submitter_is_never_accepted(project: Project, alice: Any, admin_user: Any) -> None:
    make_batch(project, "solo", 2, [alice])
    assert rounds.accept_agreed_samples(project, admin_user) == 0
    assert not GoldLabel.objects.exists()


def test_round_two_acceptance_takes_round_two_spans(project: Project, alice: Any, bob: Any, admin_user: Any) -> None:
    (sample,) = make_batch(project, "r2", 1, [alice, bob], round=2)
    span(sample, alice, 0, 6, ["Benign"], round=1)  # round 1: not read for round 2
    kept = span(sample, alice, 7, 12, ["Questionable"], round=2)
    span(sample, bob, 7, 12, ["Questionable"], round=2)
    assert rounds.accept_agreed_samples(project, admin_user, round=2) == 1
    gold = GoldLabel.objects.get()
    assert (gold.round, gold.category, [s["from_span"] for s in gold.spans]) == (2, "Q", [kept.pk])


def test_gold_spans_come_from_the_submitters_only_and_never_from_empty_label_lists(
    project: Project, alice: Any, bob: Any, admin_user: Any, django_user_model: Any
) -> None:
    # Alice and Bob submitted round 2; Cy is assigned but has not submitted, and his spans are work in progress.
    (sample,) = make_batch(project, "r2", 1, [alice, bob], round=2)
    cy = django_user_model.objects.create_user("cy", password="pw")
    Assignment.objects.create(batch=sample.batch, annotator=cy, round=2, status=Assignment.Status.ASSIGNED)
    kept = span(sample, alice, 7, 12, ["Questionable"], round=2)
    span(sample, bob, 7, 12, ["Questionable"], round=2)
    span(sample, cy, 0, 6, ["Unwanted", "Unwanted.Intrinsic"], round=2)
    span(sample, bob, 13, 18, [], round=2)  # an empty label list counts for nothing in the figures
    assert rounds.accept_agreed_samples(project, admin_user, round=2) == 1
    gold = GoldLabel.objects.get()
    assert (gold.category, [s["from_span"] for s in gold.spans]) == ("Q", [kept.pk])


def test_accepting_reads_span_values_not_whole_rows(project: Project, alice: Any, bob: Any, admin_user: Any) -> None:
    samples = make_batch(project, "many", 30, [alice, bob])
    for sample in samples:
        span(sample, alice, 0, 6, ["Benign"])
        span(sample, bob, 0, 6, ["Benign"])
    client = login(admin_user)
    with counted() as statements:
        response = client.post("/projects/demo/curation/accept-agreed/", {"round": "1"}, follow=True)
    assert "Accepted 30 samples where every annotator agreed." in response.content.decode()
    assert GoldLabel.objects.filter(method="bulk").count() == 30
    span_reads = [sql for sql in statements if sql.lstrip().upper().startswith("SELECT") and "spanannotation" in sql
                  and '"imported_fields"' in sql]
    assert span_reads == [], "accepting loaded whole span rows"


def test_a_sample_a_curator_decides_while_the_bulk_acceptance_reads_keeps_the_curators_label(
    project: Project, alice: Any, bob: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The curator's save lands between the acceptance's read of decided samples and its write: no error (a 500 on
    the page), the curator's label stays, and the count leaves that sample out."""
    first, second = make_batch(project, "b", 2, [alice, bob])
    for sample in (first, second):
        span(sample, alice, 0, 6, ["Benign"])
        span(sample, bob, 0, 6, ["Benign"])
    agreeing = rounds.sample_disagreements

    def with_a_curator_meanwhile(*args: Any, **kwargs: Any) -> Any:
        found = agreeing(*args, **kwargs)
        rounds.adjudicate_sample(first, admin_user, span_ids=[])  # the other curator's save, committed meanwhile
        return found

    monkeypatch.setattr(rounds, "sample_disagreements", with_a_curator_meanwhile)
    assert rounds.accept_agreed_samples(project, admin_user) == 1
    gold = {label.sample_id: label.method for label in GoldLabel.objects.all()}
    assert gold == {first.pk: "manual", second.pk: "bulk"}
