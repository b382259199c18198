"""The embedding job works in slices: a huge text does not hold up other projects' jobs, and nothing is done twice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from celery.signals import task_prerun

from annotate import embedder
from annotate.models import Job, Passage, Project, Sample
from annotate.services import embedding
from annotate.tasks import embed_project_texts
from annotate.text import split_sentences
from config.celery import app

pytestmark = pytest.mark.django_db

LONG_SOURCE = " ".join(f"Report {number} says the bridge needed {number + 3} new cables." for number in range(40))


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 40-sentence source counts as a long text, embedded 8 sentences at a time."""
    monkeypatch.setattr(embedding, "LONG_TEXT_CHARS", 200)
    monkeypatch.setattr(embedding, "SENTENCE_CHUNK", 8)


def project_with_texts(slug: str, source: str, summaries: list[str]) -> tuple[Project, Passage]:
    project = Project.objects.create(name=slug, slug=slug)
    batch = project.batches.create(name="b1")
    passage = Passage.objects.create(project=project, external_id="p1", text=source)
    for position, summary in enumerate(summaries):
        Sample.objects.create(project=project, passage=passage, batch=batch, position=position, summary=summary)
    return project, passage


def fresh_rows(project: Project, model: str) -> int:
    return (Passage.objects.filter(project=project, embedding_model=model).exclude(embeddings=None).count()
            + Sample.objects.filter(project=project, embedding_model=model).exclude(embeddings=None).count())


def assert_embedded_exactly(text: str, row: Passage | Sample, model: str) -> None:
    sentences = split_sentences(text)
    assert row.embedding_model == model and row.sentences == [list(pair) for pair in sentences]
    expected = embedder.embed([text[s:e] for s, e in sentences], model)
    vectors = row.sentence_vectors()
    assert vectors is not None and vectors.shape == expected.shape
    assert np.allclose(vectors, expected, atol=1e-5)


def test_a_slice_stops_at_its_limit_queues_the_rest_and_the_next_goes_on_where_it_stopped(
    small_pieces: None, django_capture_on_commit_callbacks: Any
) -> None:
    assert len(split_sentences(LONG_SOURCE)) == 40
    big, passage = project_with_texts("big", LONG_SOURCE, ["The bridge got new cables.", "Report 3 was late."])
    other, _ = project_with_texts("other", "A short source. Two sentences.", ["A short summary."])
    big_job, other_job = embedding.queue_embedding(big), embedding.queue_embedding(other)
    model = big_job.options["model"]
    assert big_job.total == 3
    markers, progress, requeued = [], [], []
    for _ in range(10):
        with django_capture_on_commit_callbacks() as queued:
            job = embedding.run_embedding_job(big_job.pk, max_sentences=16)
        requeued.append(len(queued))
        passage.refresh_from_db()
        markers.append(passage.embedding_model)
        progress.append((job.status, job.done))
        assert job.done == fresh_rows(big, model)  # progress is what is really done, never more
        if len(markers) == 1:
            # Between two slices of the big job, the other project's job gets its turn.
            assert embedding.run_embedding_job(other_job.pk).status == Job.Status.DONE
            assert passage.sentence_vectors() is None  # a half-embedded text counts as not embedded yet
        if job.status == Job.Status.DONE:
            break
    # 16 sentences a slice, 8 at a time: 16, then 32 (each slice resumes where the last one stopped), then the
    # last 8 and both summaries in the third slice, which queues nothing more.
    assert markers == [f"partial:16:{model}", f"partial:32:{model}", model]
    assert requeued == [1, 1, 0]
    assert progress == [("running", 0), ("running", 0), ("done", 3)]
    assert_embedded_exactly(LONG_SOURCE, passage, model)
    for sample in Sample.objects.filter(project=big):
        assert_embedded_exactly(sample.summary, sample, model)


def test_a_repeated_slice_after_a_restart_neither_redoes_nor_double_counts(small_pieces: None) -> None:
    project, passage = project_with_texts("big", LONG_SOURCE, ["The bridge got new cables."])
    job = embedding.queue_embedding(project)
    model = job.options["model"]
    embedding.run_embedding_job(job.pk, max_sentences=16)
    # The worker died after queueing the next slice but before acknowledging this one: both messages run.
    first = embedding.run_embedding_job(job.pk, max_sentences=16)
    passage.refresh_from_db()
    assert passage.embedding_model == f"partial:32:{model}" and first.done == 0
    second = embedding.run_embedding_job(job.pk, max_sentences=16)
    assert second.status == Job.Status.DONE and second.done == second.total == 2
    third = embedding.run_embedding_job(job.pk, max_sentences=16)  # a late duplicate finds the job done
    assert third.done == 2
    passage.refresh_from_db()
    assert_embedded_exactly(LONG_SOURCE, passage, model)


def test_a_text_written_by_another_run_meanwhile_is_not_written_or_counted_again(batch: Any) -> None:
    job = embedding.queue_embedding(batch.project)
    model = job.options["model"]
    stale = Sample.objects.filter(batch=batch).order_by("pk").first()  # what a slow run read, still unembedded
    finished = embedding.run_embedding_job(job.pk)  # a second run does everything meanwhile
    assert finished.done == finished.total == 4
    embedding._embed_rows([stale], "summary", model)
    assert embedding._save_embedded(Sample, stale, "", model, sentences=stale.sentences,
                                    embeddings=stale.embeddings, embedding_model=model) == 0


@pytest.fixture
def eager_celery() -> Iterator[None]:
    """Tasks run in the calling thread, as unit tests of a task chain may (DESIGN.md: eager only in unit tests)."""
    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    yield
    app.conf.task_always_eager, app.conf.task_eager_propagates = before


def test_the_task_requeues_itself_until_everything_is_embedded_once(
    small_pieces: None, eager_celery: None, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    settings.EMBEDDING_SLICE_SENTENCES = 16
    settings.EMBEDDING_SLICE_SECONDS = 600
    project, passage = project_with_texts("big", LONG_SOURCE, ["The bridge got new cables.", "Report 3 was late."])
    job = embedding.queue_embedding(project)
    model = job.options["model"]
    runs: list[int] = []

    def count_run(task: Any = None, args: Any = None, **_: Any) -> None:
        if task.name == embed_project_texts.name:
            runs.append(args[0])

    task_prerun.connect(count_run, weak=False)
    try:
        with django_capture_on_commit_callbacks(execute=True) as queued:
            embed_project_texts.delay(job.pk)
    finally:
        task_prerun.disconnect(count_run)
    assert runs == [job.pk, job.pk, job.pk]  # three slices of 16 sentences for 40 + 2 summaries
    assert len(queued) == 2  # the first two slices each queued the next
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.done == job.total == 3
    passage.refresh_from_db()
    assert_embedded_exactly(LONG_SOURCE, passage, model)


def test_the_time_limit_also_ends_a_slice(small_pieces: None, django_capture_on_commit_callbacks: Any) -> None:
    project, passage = project_with_texts("big", LONG_SOURCE, ["The bridge got new cables."])
    job = embedding.queue_embedding(project)
    with django_capture_on_commit_callbacks() as queued:
        # No time at all: the slice still embeds its first 8 sentences, then stops and queues the rest.
        sliced = embedding.run_embedding_job(job.pk, max_seconds=0)
    passage.refresh_from_db()
    assert sliced.status == Job.Status.RUNNING and len(queued) == 1
    assert passage.embedding_model == f"partial:8:{job.options['model']}"
