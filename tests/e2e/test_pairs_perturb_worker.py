"""A real Celery worker runs the perturbation job of a pairs project with tiny models built for the test."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from django.db import transaction

from annotate.models import Job, PairConfig, PairItem, PairOriginal, PerturbedText, Project
from annotate.perturbation.models import load_models
from annotate.perturbation.pipeline import PerturbationParams, perturb_text
from annotate.services.pairs import perturb
from tests.e2e.worker_helpers import wait_for
from tests.pairs.factories_perturbation import TEXTS, build_tiny_models

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_worker_perturbs_every_waiting_original_once(worker: subprocess.Popen, tmp_path: Path) -> None:
    masked_lm, causal_lm = build_tiny_models(tmp_path)
    project = Project.objects.create(name="Perturb worker", slug="perturb-worker", kind=Project.Kind.PAIRS)
    # The project's own paths: the worker's environment has no PAIRS_* settings.
    PairConfig.objects.create(project=project, masked_lm=str(masked_lm), causal_lm=str(causal_lm), candidates=6)
    for index, text in enumerate(TEXTS):
        PairOriginal.objects.create(project=project, external_id=f"t{index}", text=text)

    with transaction.atomic():
        job = perturb.start_perturbation(project, None, seed=21)
    job = wait_for(job, worker, seconds=300)
    assert job.status == Job.Status.DONE, job.error
    assert (job.done, job.total, job.options["perturbed"], job.options["skipped_count"]) == (2, 2, 2, 0)

    models = load_models(str(masked_lm), str(causal_lm))
    for perturbed in PerturbedText.objects.filter(project=project).select_related("original"):
        assert perturbed.original.perturbed_at is not None
        assert perturbed.parameters["candidates"] == 6 and len(perturbed.parameters["candidate_perplexities"]) == 6
        # The worker's perturbation is the one this process makes with the same seed and models.
        here = perturb_text(perturbed.original.text, models, PerturbationParams(candidates=6), perturbed.seed)
        assert perturbed.text == here.text
        items = list(perturbed.items.order_by("position"))
        assert [(item.original_words, item.perturbed_words) for item in items] == [
            (span.original_words, span.perturbed_words) for span in here.spans
        ]
        for item in items:
            assert item.state == PairItem.State.POOL
            assert perturbed.text[item.perturbed_start : item.perturbed_end] == item.perturbed_words
            assert perturbed.original.text[item.original_start : item.original_end] == item.original_words
    assert PerturbedText.objects.filter(project=project).count() == 2
    assert not PairOriginal.objects.filter(project=project, perturbed_at__isnull=True).exists()
