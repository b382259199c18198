"""The curation page lists a page of samples at a time, with the counts of the whole list, and reads no blobs."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.models import Assignment, Batch, FigureSet, GoldLabel, Passage, Project, Sample, SpanAnnotation
from annotate.services import curation, rounds
from tests.conftest import SOURCE, login
from tests.queries import counted

pytestmark = pytest.mark.django_db


def submitted_batch(project: Project, name: str, position: int, people: list[Any], labels: list[list[str]]) -> Batch:
    """A batch with one sample per entry of ``labels``: each person marks one span with those labels (none: C)."""
    passage = Passage.objects.get_or_create(project=project, external_id="p", defaults={"text": SOURCE})[0]
    batch = Batch.objects.create(project=project, name=name, position=position)
    for index, span_labels in enumerate(labels):
        sample = Sample.objects.create(project=project, passage=passage, batch=batch, position=index,
                                       external_id=f"{name}-{index}", summary="A short summary of it.",
                                       embeddings=b"\0" * 64, sentences=[[0, 22]], metadata={"big": "x" * 100})
        for person in people:
            if span_labels:
                SpanAnnotation.objects.create(sample=sample, annotator=person, round=1, start=0, end=7,
                                              text="A short", labels=span_labels)
    for person in people:
        Assignment.objects.create(batch=batch, annotator=person, round=1, status=Assignment.Status.SUBMITTED)
    return batch


def sample_ids(page: str) -> list[str]:
    return re.findall(r'<tr data-sample="(\d+)"', page)


@pytest.fixture
def seven(project: Project, alice: Any, bob: Any) -> Project:
    """Seven samples: five agreed (three C, two B), then two disputed ones in a second batch."""
    submitted_batch(project, "first", 0, [alice, bob], [[], ["Benign"], [], ["Benign"], []])
    batch = submitted_batch(project, "second", 1, [alice, bob], [["Benign"], ["Questionable"]])
    for sample in batch.samples.all():  # bob marks something worse: disputed
        SpanAnnotation.objects.create(sample=sample, annotator=bob, round=1, start=8, end=13, text="summa",
                                      labels=["Unwanted", "Unwanted.Intrinsic"])
    return project


def test_curation_shows_one_page_with_the_counts_of_the_whole_list(
    seven: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(curation, "ROWS_PER_PAGE", 3)
    client = login(admin_user)
    first = client.get("/projects/demo/curation/?round=1").content.decode()
    disputed = [str(pk) for pk in Sample.objects.filter(batch__name="second").order_by("position")
                .values_list("pk", flat=True)]
    assert sample_ids(first)[:2] == disputed and len(sample_ids(first)) == 3  # disputed first
    assert "Accept 5 agreed samples" in first  # the whole list's agreed samples, not the page's
    assert "7 samples with submitted work in round 1, 2 disputed; showing 1–3." in first
    assert "page 1 of 3" in first and 'href="?round=1&amp;page=2"' in first
    later = client.get("/projects/demo/curation/?round=1&page=3").content.decode()
    assert len(sample_ids(later)) == 1 and "page 3 of 3" in later and 'href="?round=1&amp;page=2"' in later
    every = [pk for number in (1, 2, 3)
             for pk in sample_ids(client.get(f"/projects/demo/curation/?round=1&page={number}").content.decode())]
    assert sorted(every) == sorted(str(pk) for pk in Sample.objects.values_list("pk", flat=True))


def test_a_bad_page_number_shows_a_page_and_changes_nothing(
    seven: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(curation, "ROWS_PER_PAGE", 3)
    client = login(admin_user)
    assert "page 1 of 3" in client.get("/projects/demo/curation/?page=abc").content.decode()
    assert "page 3 of 3" in client.get("/projects/demo/curation/?page=99").content.decode()
    assert not GoldLabel.objects.exists()


def test_curation_reads_no_embeddings_and_a_fixed_number_of_queries(seven: Project, admin_user: Any,
                                                                    alice: Any, bob: Any) -> None:
    client = login(admin_user)
    client.get("/projects/demo/curation/")
    FigureSet.objects.all().delete()  # the list is worked out again, not read back kept (test_current_figures)
    with counted() as few:
        page = client.get("/projects/demo/curation/").content.decode()
    assert len(sample_ids(page)) == 7
    loaded = " ".join(few)
    for column in ("embeddings", "sentences", "metadata", "summary"):
        assert f'"{column}"' not in loaded, f"the curation page read {column}"
    for number in range(2, 6):
        submitted_batch(seven, f"more-{number}", number, [alice, bob], [["Benign"], []])
    FigureSet.objects.all().delete()
    with counted() as many:
        client.get("/projects/demo/curation/")
    assert len(many) == len(few)


def test_the_adjudication_page_reads_no_embeddings(seven: Project, admin_user: Any) -> None:
    sample = Sample.objects.filter(batch__name="second").first()
    client = login(admin_user)
    with counted() as statements:
        page = client.get(f"/projects/demo/curation/{sample.pk}/").content.decode()
    # The summary is printed, its words cut by the marks of the annotators' spans.
    assert "A short summary of it." in re.sub(r"<[^>]*>", "", page)
    assert not any('"embeddings"' in sql for sql in statements)


def test_disagreements_pool_each_annotators_spans_to_their_worst_label(project: Project, alice: Any,
                                                                        bob: Any) -> None:
    batch = submitted_batch(project, "b", 0, [alice, bob], [["Benign"], []])
    first, second = batch.samples.order_by("position")
    for labels in (["Benign"], ["Questionable"], ["Benign"], ["Unwanted.Extrinsic"], []):
        SpanAnnotation.objects.create(sample=second, annotator=alice, round=1, start=0, end=3, text="A s",
                                      labels=labels)
    SpanAnnotation.objects.create(sample=second, annotator=bob, round=2, start=0, end=3, text="A s",
                                  labels=["Questionable"])  # another round: not counted
    assert rounds.sample_disagreements(project, 1) == {
        first.pk: {"alice": "B", "bob": "B"},
        second.pk: {"alice": "U", "bob": "C"},
    }
