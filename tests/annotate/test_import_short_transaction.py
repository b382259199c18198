"""An import checks and prepares everything first; its transaction (SQLite's write lock) only inserts, in bulk.

docs/performance.md, section 3: a 100,000-sample import held the lock for
45 s and more, and every other writer got "database is locked". These tests
hold the parts that make the transaction short: no refused import opens one,
the statements in it do not grow with the number of samples or spans, the
rows it writes are those the ORM would write, and what another writer changed
between the checks and the transaction refuses the import, writing nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotate.models import Batch, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services import ingest
from annotate.services.ingest import prepare
from annotate.taxonomy import default_taxonomy
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def faithbench(samples: int, *, names: tuple[str, ...] = ("Ana", "Bo"), file: str = "batch_1.json") -> Any:
    """A parsed FaithBench batch: ``samples`` samples over samples // 3 + 1 passages, one span by each name."""
    rows = []
    for number in range(samples):
        summary = f"Summary number {number} of its passage."
        rows.append({
            "sample_id": number, "source": f"Source text number {number // 3}.", "summary": summary,
            "metadata": {"summarizer": f"org/model-{number % 3}", "hhem-2.1": 0.5},
            "annotations": [
                {"annot_id": f"{number}-{index}", "annotator_id": f"id-{index}", "annotator_name": name,
                 "label": ["Unwanted", "Unwanted.Intrinsic"], "note": "n", "summary_span": summary[0:7],
                 "summary_start": 0, "summary_end": 7, "source_start": None, "source_end": None}
                for index, name in enumerate(names)
            ],
        })
    return ingest.parse_faithbench(json.dumps({"samples": rows}).encode(), file, default_taxonomy())


@pytest.fixture
def target() -> Project:
    return Project.objects.create(name="Target", slug="target")


@pytest.fixture
def transactions_opened(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every transaction.atomic block entered (the test's own is already open, so these are the import's)."""
    opened: list[str] = []
    enter = transaction.Atomic.__enter__

    def counted(self: Any) -> None:
        opened.append("atomic")
        enter(self)

    monkeypatch.setattr(transaction.Atomic, "__enter__", counted)
    yield opened


def queries_in_write(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Patch PreparedImport.write to record how many statements each call sends."""
    counts: list[int] = []
    write = prepare.PreparedImport.write

    def counted(self: prepare.PreparedImport) -> list[Batch]:
        with CaptureQueriesContext(connection) as captured:
            batches = write(self)
        counts.append(len(captured.captured_queries))
        return batches

    monkeypatch.setattr(prepare.PreparedImport, "write", counted)
    return counts


def test_the_statements_in_the_transaction_do_not_grow_with_the_samples(
    target: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = queries_in_write(monkeypatch)
    # Each import makes two new accounts, so that both send the same statements but the rows.
    ingest.import_batches(target, [faithbench(6, file="small.json")])
    # The first 6 samples are the small batch's again: allowed, so that only the rows differ.
    ingest.import_batches(target, [faithbench(600, names=("Cy", "Di"), file="large.json")], allow_repeats=True)
    assert Sample.objects.filter(batch__name="large").count() == 600
    assert SpanAnnotation.objects.filter(sample__batch__name="large").count() == 1200
    # 100 times the rows, the same statements (bulk, none a row), but the repeat re-check (one query) that
    # allow_repeats skips.
    assert counts[0] == counts[1] + 1, counts
    assert counts[1] < 20


def test_a_refused_import_opens_no_transaction(target: Project, transactions_opened: list[str]) -> None:
    ingest.import_batches(target, [faithbench(3)])
    transactions_opened.clear()
    with pytest.raises(ingest.ImportFailed, match="batch 'batch_1' already exists in project 'target'"):
        ingest.import_batches(target, [faithbench(3)])
    changed = faithbench(3, file="batch_2.json")
    changed.samples[0].source = "Not the source the project holds under this passage id."
    with pytest.raises(ingest.ImportFailed, match="already exists with a different source text"):
        ingest.import_batches(target, [changed])
    too_long = faithbench(1, names=("x" * 148,), file="batch_3.json")
    with pytest.raises(ingest.ImportFailed, match="the limit is 150"):
        ingest.import_batches(target, [too_long], annotators=ingest.BY_ID)
    assert transactions_opened == []
    assert Batch.objects.filter(project=target).count() == 1


def test_the_rows_written_are_those_the_orm_would_write(target: Project) -> None:
    before = timezone.now()
    report = ingest.import_batches(target, [faithbench(4)])
    span = SpanAnnotation.objects.select_related("sample__passage", "annotator").get(
        sample__external_id="1", annotator__username="Bo"
    )
    assert (span.start, span.end, span.text, span.labels, span.note) == (0, 7, "Summary", [
        "Unwanted", "Unwanted.Intrinsic"], "n")
    assert (span.version, span.round, span.origin_id, span.source_start, span.source_text) == (1, 1, None, None, None)
    assert span.imported_fields["annot_id"] == "1-1"
    assert before <= span.created_at == span.updated_at <= timezone.now()
    sample = span.sample
    assert (sample.position, sample.generator, sample.metadata) == (1, "org/model-1", {
        "summarizer": "org/model-1", "hhem-2.1": 0.5})
    assert (sample.sentences, sample.embeddings, sample.embedding_model) == (None, None, "")
    assert sample.passage.text == "Source text number 0."
    assert Passage.objects.filter(project=target).count() == 2
    assert [s.external_id for s in Sample.objects.filter(batch=report.batches[0])] == ["0", "1", "2", "3"]
    assert report.samples == 4 and report.spans == 8 and report.annotators == ["Ana", "Bo"]


def between_check_and_write(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None]) -> None:
    """Run ``change`` after the import was checked and prepared, before its transaction: another writer's turn."""
    prepare_import = prepare.prepare_import

    def prepared_then_changed(*args: Any, **kwargs: Any) -> prepare.PreparedImport:
        prepared = prepare_import(*args, **kwargs)
        change()
        return prepared

    monkeypatch.setattr(ingest.write, "prepare_import", prepared_then_changed)


def assert_nothing_imported(target: Project) -> None:
    assert not Sample.objects.filter(project=target).exists()
    assert not SpanAnnotation.objects.filter(sample__project=target).exists()
    assert not Membership.objects.filter(project=target).exists()
    assert not get_user_model().objects.filter(username__in=["Ana", "Bo"]).exists()


def test_a_batch_another_import_added_meanwhile_refuses_the_import(
    target: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    between_check_and_write(monkeypatch, lambda: Batch.objects.create(project=target, name="batch_1"))
    with pytest.raises(ingest.ImportFailed, match="^batch 'batch_1' already exists in project 'target'$"):
        ingest.import_batches(target, [faithbench(3)])
    assert_nothing_imported(target)


def test_an_account_made_meanwhile_under_a_new_annotators_name_refuses_the_import(
    target: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    between_check_and_write(monkeypatch, lambda: make_user("bo"))
    with pytest.raises(ingest.ImportFailed, match="^annotator 'bo': an account with that username was made while "
                                                  "this import was being checked; nothing was imported"):
        ingest.import_batches(target, [faithbench(3)])
    assert not Sample.objects.filter(project=target).exists()
    assert not get_user_model().objects.filter(username="Ana").exists()


def test_a_passage_another_import_added_meanwhile_refuses_the_import(
    target: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = faithbench(1).samples[0].passage_key
    between_check_and_write(
        monkeypatch, lambda: Passage.objects.create(project=target, external_id=key, text="Source text number 0.")
    )
    with pytest.raises(ingest.ImportFailed, match="another import added some of this import's passages to project "
                                                  "'target' while this one was being checked; nothing was imported"):
        ingest.import_batches(target, [faithbench(3)])
    assert_nothing_imported(target)


def test_two_long_names_taken_elsewhere_get_two_new_accounts_though_none_is_saved_while_checking(
    target: Project,
) -> None:
    # Both names are held outside the project and shorten to the same "<name> (imported)": the second one must see
    # the first's planned account as taken, though it is only saved inside the transaction.
    first, second = "x" * 145 + "first", "x" * 145 + "other"
    make_user(first)
    make_user(second)
    report = ingest.import_batches(target, [faithbench(2, names=(first, second))])
    made = sorted(report.renamed.values())
    assert made == sorted(["x" * 139 + " (imported)", "x" * 137 + " (imported 2)"])
    assert sorted(Membership.objects.filter(project=target).values_list("user__username", flat=True)) == made
