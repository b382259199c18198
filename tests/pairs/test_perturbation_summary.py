"""A finished perturbation job shows, on the project page, what it made and with which models and parameters.

Before: the model paths, the seed and the parameters were stored with each perturbed text but shown
nowhere (the page said only "6 / 6 · Done"), so an admin could not tell which models had made the pool.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Job, PairOriginal, PerturbedText, Project
from annotate.services.pairs import perturb
from annotate.services.pairs.config import get_config
from tests.pairs.factories_perturbation import TEXTS, build_tiny_models


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("review4-summary-models"))


def summary_block(html: str, job: Job) -> str:
    found = re.search(rf'<dl[^>]*data-role="perturbation-summary" data-job="{job.pk}">(.*?)</dl>', html, re.S)
    assert found, "no perturbation summary on the page"
    return found.group(1)


@pytest.mark.django_db
def test_a_finished_job_shows_its_models_seed_and_parameters(
    pairs_project: Project, admin_user: Any, model_dirs: tuple[Path, Path], settings: Any
) -> None:
    settings.PAIRS_MASKED_LM = settings.PAIRS_CAUSAL_LM = settings.PAIRS_SPACY_PIPELINE = ""
    config = get_config(pairs_project)
    config.masked_lm, config.causal_lm = str(model_dirs[0]), str(model_dirs[1])
    config.candidates, config.top_k, config.mask_ratio = 3, 4, 0.5
    config.save()
    for index, text in enumerate(TEXTS):
        PairOriginal.objects.create(project=pairs_project, external_id=f"t{index}", text=text)
    job = perturb.run_perturbation_job(perturb.start_perturbation(pairs_project, None, seed=7, queue=False).pk)
    assert job.status == Job.Status.DONE

    client = Client()
    client.force_login(admin_user)
    html = client.get(reverse("project", args=[pairs_project.slug])).content.decode()
    block = summary_block(html, job)
    made = PerturbedText.objects.filter(project=pairs_project).count()
    assert made == 2
    assert f"{made} perturbed texts, {job.options['items']} items" in block
    assert f'<code data-model="masked_lm">{model_dirs[0]}</code>' in block
    assert f'<code data-model="causal_lm">{model_dirs[1]}</code>' in block
    assert '<code data-model="spacy_pipeline">' in block
    assert '<dd data-parameter="seed">7</dd>' in block
    for name, value in {"context_sentences": "2", "mask_ratio": "0.5", "top_k": "4", "temperature": "1.0",
                        "candidates": "3"}.items():
        assert f'{name} <span data-parameter="{name}">{value}</span>' in block
    # The same models and parameters are what each perturbed text stored.
    stored = PerturbedText.objects.filter(project=pairs_project).first().parameters
    assert (stored["masked_lm"], stored["causal_lm"], stored["top_k"], stored["candidates"]) == (
        str(model_dirs[0]), str(model_dirs[1]), 4, 3)


@pytest.mark.django_db
def test_a_failed_job_shows_its_error_and_no_summary(pairs_project: Project, admin_user: Any, settings: Any) -> None:
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, total=1, status=Job.Status.FAILED,
                             error="The causal LM path '/x' (PAIRS_CAUSAL_LM) is not a directory on this server.")
    client = Client()
    client.force_login(admin_user)
    html = client.get(reverse("project", args=[pairs_project.slug])).content.decode()
    assert "The causal LM path &#x27;/x&#x27; (PAIRS_CAUSAL_LM) is not a directory on this server." in html
    assert f'data-job="{job.pk}"' not in html
