"""A real Celery worker computes span vectors and draws pairs rounds (1 at random, 2 through the detector)."""

from __future__ import annotations

import subprocess

import pytest
from django.db import transaction

from annotate.models import Job, PairConfig, PairDetector, PairItem, PairRound, Project
from annotate.services.pairs import rounds, vectors
from tests.e2e.worker_helpers import wait_for
from tests.pairs.conftest import make_pair_items

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_worker_computes_vectors_and_draws_round_one_then_round_two(worker: subprocess.Popen) -> None:
    project = Project.objects.create(name="Pairs worker", slug="pairs-worker", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=project, min_counts=10)
    make_pair_items(project, 20, round_number=None)

    with transaction.atomic():
        job = rounds.start_round_job(project, None, size=12, seed=5)
    job = wait_for(job, worker)
    assert job.status == Job.Status.DONE, job.error
    first = PairRound.objects.get(project=project, number=1)
    assert job.options["round"] == 1 and first.status == PairRound.Status.OPEN and first.seed == 5
    assert PairItem.objects.filter(round=first, state=PairItem.State.OPEN).count() == 12

    # The round-1 items reach consensus: the factory's name and date swaps H, the verb and synonym swaps N.
    for item in PairItem.objects.filter(round=first):
        label = "H" if item.perturbed_words in ("Tom Price", "June") else "N"
        PairItem.objects.filter(pk=item.pk).update(state=PairItem.State.CONSENSUS, label=label)
    assert {item.label for item in PairItem.objects.filter(round=first)} == {"H", "N"}

    with transaction.atomic():
        vector_job = vectors.start_vector_job(project)
    vector_job = wait_for(vector_job, worker)
    assert vector_job.status == Job.Status.DONE, vector_job.error
    assert vector_job.done == vector_job.total == 20
    assert not vectors.stale_items(project, vectors.encoder_name(project)).exists()
    kept = {item.pk: bytes(item.vector) for item in PairItem.objects.filter(project=project)}

    with transaction.atomic():
        job = rounds.start_round_job(project, None, size=4, low=0.0, high=1.0, paraphrase_max=1.0,
                                     drop_fraction=0.0, seed=6)
    job = wait_for(job, worker)
    assert job.status == Job.Status.DONE, job.error
    second = PairRound.objects.get(project=project, number=2)
    assert second.detector is not None and second.detector.number == 1 and second.detector.trained_on == 12
    assert [row["step"] for row in second.funnel] == ["pool", "band", "paraphrase", "date_name", "subsampling",
                                                      "selected"]
    assert second.funnel[0]["count"] == 8 and second.funnel[-1]["count"] == PairItem.objects.filter(
        round=second).count()
    assert all(item.selection["method"] == "detector" for item in PairItem.objects.filter(round=second))
    first.refresh_from_db()
    assert first.status == PairRound.Status.CLOSED
    # The vectors were computed once: the round job found nothing left to encode and rewrote none.
    assert {item.pk: bytes(item.vector) for item in PairItem.objects.filter(project=project)} == kept

    # The same job queued again (a redelivery) draws no second round.
    Job.objects.filter(pk=job.pk).update(status=Job.Status.QUEUED)
    from annotate.tasks import create_pair_round

    with transaction.atomic():
        transaction.on_commit(lambda: create_pair_round.delay(job.pk))
    redone = wait_for(job, worker)
    assert redone.status == Job.Status.DONE
    assert PairRound.objects.filter(project=project).count() == 2
    assert PairDetector.objects.filter(project=project).count() == 1
