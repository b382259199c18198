"""The pairs jobs after their worker is killed, then a worker start: perturbation, span vectors and round jobs are
finished once (no second perturbed text, vector or round); and a perturbation job no worker runs can be cancelled
from the project page or the API, as a round job can.

Real kombu messages in the test's own queue folder stand for the broker (tests/annotate/job_queue.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from annotate import tasks
from annotate.models import Job, PairConfig, PairItem, PairOriginal, PairRound, PerturbedText, Project
from annotate.services import jobs
from annotate.services.pairs import perturb, rounds, vectors
from annotate.services.pairs.rounds import job as round_job_module
from tests.annotate.job_queue import (
    finished_after_worker_start,
    job_queue_fixture,  # noqa: F401  (the queue fixture)
    kill_on_call,
    run_until_killed,
    waiting,
    worker_start,
)
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_perturbation import TEXTS, build_tiny_models
from tests.pairs.page_helpers import HTMX, text_of

pytestmark = pytest.mark.django_db

ROUND_TWO = {"size": 4, "low": 0.0, "high": 1.0, "paraphrase_max": 1.0, "drop_fraction": 0.0}
CANCELLED = re.compile(r"Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.")
PAGE = "/projects/pairs/"


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("perturbation-models"))


@pytest.fixture
def perturbable(pairs_project: Project, model_dirs: tuple[Path, Path], settings: Any) -> Project:
    """Four originals to perturb with the tiny models (the project's own paths)."""
    settings.PAIRS_MASKED_LM = settings.PAIRS_CAUSAL_LM = settings.PAIRS_SPACY_PIPELINE = ""
    PairConfig.objects.update_or_create(project=pairs_project, defaults={
        "masked_lm": str(model_dirs[0]), "causal_lm": str(model_dirs[1]), "candidates": 4})
    for copy in range(2):
        for index, text in enumerate(TEXTS):
            PairOriginal.objects.create(project=pairs_project, external_id=f"t{index}-{copy}", text=text)
    return pairs_project


def texts_of(project: Project) -> list[tuple[int, str, str]]:
    return sorted(PerturbedText.objects.filter(project=project).values_list("pk", "original__external_id", "text"))


# ----------------------------------------------------------------------------- perturbation


def test_a_killed_perturbation_keeps_what_it_perturbed_and_the_next_worker_does_the_rest_once(
    perturbable: Project, admin_user: Any, queue: Path, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    job = perturb.start_perturbation(perturbable, admin_user, seed=5)
    kill_on_call(monkeypatch, perturb, "save_perturbation", 2)  # dies while saving the second original
    run_until_killed(tasks.perturb_originals, job)
    first = texts_of(perturbable)
    assert (job.status, job.done, len(first)) == (Job.Status.RUNNING, 1, 1)
    with pytest.raises(perturb.PerturbationError, match="already running"):
        perturb.start_perturbation(perturbable, admin_user)  # what the stuck job used to do for good

    finished_after_worker_start(queue, tasks.perturb_originals, job, django_capture_on_commit_callbacks, starts=2)
    assert (job.status, job.done, job.total) == (Job.Status.DONE, 4, 4)
    texts = texts_of(perturbable)
    assert texts[:1] == first  # kept as it was, not made again
    assert sorted(external_id for _, external_id, _ in texts) == ["t0-0", "t0-1", "t1-0", "t1-1"]
    assert job.options["perturbed"] == 4 and job.options["items"] == PairItem.objects.count() > 0
    # One item per replaced span of each text: nothing written twice.
    for text in PerturbedText.objects.filter(project=perturbable):
        positions = list(text.items.values_list("position", flat=True))
        assert sorted(positions) == list(range(len(positions))) and positions
    assert not PairOriginal.objects.filter(project=perturbable, perturbed_at__isnull=True).exists()
    worker_start()
    assert waiting(queue) == []


def test_a_perturbation_job_cancelled_while_it_runs_stops_before_its_next_original(
    perturbable: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = perturb.start_perturbation(perturbable, admin_user, seed=5)
    real_save = perturb.save_perturbation

    def save_then_cancel(*args: Any, **kwargs: Any) -> bool:
        saved = real_save(*args, **kwargs)
        perturb.cancel_perturbation_job(Job.objects.get(pk=job.pk), admin_user)  # an admin, meanwhile
        return saved

    monkeypatch.setattr(perturb, "save_perturbation", save_then_cancel)
    ended = perturb.run_perturbation_job(job.pk)
    assert ended.status == Job.Status.FAILED and CANCELLED.fullmatch(ended.error), ended.error
    assert ended.done == 1 and PerturbedText.objects.count() == 1  # the original it finished keeps its text

    monkeypatch.setattr(perturb, "save_perturbation", real_save)
    again = perturb.start_perturbation(perturbable, admin_user, seed=5)  # the rest, by a new job
    assert again.total == 3
    assert perturb.run_perturbation_job(again.pk).status == Job.Status.DONE
    assert PerturbedText.objects.count() == 4
    assert perturb.run_perturbation_job(job.pk).error == ended.error  # the cancelled job stays as it was


def test_a_stuck_perturbation_job_is_cancelled_from_the_project_page(
    perturbable: Project, admin_user: Any, queue: Path
) -> None:
    job = perturb.start_perturbation(perturbable, admin_user)
    client = login(admin_user)
    refused = client.post(f"{PAGE}pairs/perturb/", follow=True).content.decode()
    assert (f"Perturbation not started: a perturbation job is already queued (job {job.pk}: 0 of 4 texts done); "
            "wait for it to finish, or cancel it") in refused
    page = client.get(PAGE).content.decode()
    cancel_url = f"{PAGE}pairs/perturb/jobs/{job.pk}/cancel/"
    assert 'data-role="perturbation-running"' in page and f'hx-post="{cancel_url}"' in page
    assert re.search(rf"Job {job.pk}: queued for \d+ seconds?",
                     text_of(page, r'data-role="perturbation-job-wait">(.*?)\(')), page

    assert client.get(cancel_url).status_code == 405
    response = client.post(cancel_url, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == f"{PAGE}#perturbation"
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and CANCELLED.fullmatch(job.error)
    assert job.options["cancelled_by"] == "adam" and job.finished_at is not None
    after = client.get(PAGE).content.decode()
    assert "is cancelled; the originals it perturbed keep their texts" in after
    assert 'data-role="start-perturbation"' in after and 'data-role="cancel-perturbation-job"' not in after
    worker_start()  # a cancelled job is not resumed
    assert waiting(queue) == []

    followed = client.post(cancel_url, follow=True).content.decode()
    cancel = job.error.removeprefix("Cancelled ").removesuffix(".")  # "by adam at <time> UTC"
    assert f"Not cancelled: Job {job.pk} was already cancelled {cancel}; nothing was changed." in followed


def test_the_api_cancels_a_perturbation_job_for_admins_only(
    pairs_project: Project, admin_user: Any, alice: Any, charlie: Any
) -> None:
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, total=1, created_by=admin_user,
                             status=Job.Status.RUNNING, options={"seed": 1})
    url = f"/api/projects/pairs/perturbation-jobs/{job.pk}/cancel/"
    assert login(alice).post(url, content_type="application/json").status_code == 403
    assert login(charlie).post(url, content_type="application/json").status_code == 404
    assert login(admin_user).post(url, {"stray": 1}, content_type="application/json").status_code == 400
    job.refresh_from_db()
    assert job.status == Job.Status.RUNNING

    answer = login(admin_user).post(url, content_type="application/json")
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "failed" and body["cancelled_by"] == "adam" and CANCELLED.fullmatch(body["error"])
    assert (body["id"], body["done"], body["total"], body["created_by"]) == (job.pk, 0, 1, "adam")
    again = login(admin_user).post(url, content_type="application/json")
    assert again.status_code == 409 and again.json()["detail"].startswith(f"Job {job.pk} was already cancelled")
    other = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_ROUND, options={})
    missing = login(admin_user).post(f"/api/projects/pairs/perturbation-jobs/{other.pk}/cancel/",
                                     content_type="application/json")
    assert missing.status_code == 404  # a round job is not a perturbation job


# ----------------------------------------------------------------------------- span vectors and round jobs


def test_a_killed_span_vector_job_is_finished_by_the_next_worker_without_computing_a_vector_twice(
    pairs_project: Project, admin_user: Any, queue: Path, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    monkeypatch.setattr(vectors, "TEXTS_PER_CHUNK", 1)
    make_pair_items(pairs_project, 4, round_number=None)
    job = vectors.start_vector_job(pairs_project, admin_user)
    encoded: list[int] = []
    real_features = vectors.features_for_texts

    def recorded(texts: list[PerturbedText], items: list[PairItem], span_encoder: Any) -> Any:
        encoded.extend(item.pk for item in items)
        return real_features(texts, items, span_encoder)

    monkeypatch.setattr(vectors, "features_for_texts", recorded)
    kill_on_call(monkeypatch, vectors, "features_for_texts", 3)  # two texts' items written, then killed
    run_until_killed(tasks.compute_pair_vectors, job)
    kept = dict(PairItem.objects.filter(vector__isnull=False).values_list("pk", "vector"))
    assert (job.status, job.done, len(kept)) == (Job.Status.RUNNING, 2, 2)

    finished_after_worker_start(queue, tasks.compute_pair_vectors, job, django_capture_on_commit_callbacks)
    assert (job.status, job.done, job.total) == (Job.Status.DONE, 4, 4)
    assert sorted(encoded) == sorted(PairItem.objects.values_list("pk", flat=True))  # each item encoded once
    assert {pk: vector for pk, vector in PairItem.objects.values_list("pk", "vector") if pk in kept} == kept


def test_a_killed_round_job_draws_its_round_once_at_the_next_worker_start(
    detector_project: Project, admin_user: Any, queue: Path, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    job = rounds.start_round_job(detector_project, admin_user, number=2, seed=3, **ROUND_TWO)
    kill_on_call(monkeypatch, round_job_module, "create_round", 1)  # killed while writing the round
    run_until_killed(tasks.create_pair_round, job)
    assert job.status == Job.Status.RUNNING and not PairRound.objects.filter(number=2).exists()
    assert rounds.round_job_busy(detector_project) is not None  # the wizard would refuse every round

    finished_after_worker_start(queue, tasks.create_pair_round, job, django_capture_on_commit_callbacks)
    drawn = PairRound.objects.get(project=detector_project, number=2)
    assert job.status == Job.Status.DONE and job.options["round_id"] == drawn.pk and drawn.seed == 3
    assert drawn.items.count() == 4

    tasks.create_pair_round(job.pk)  # a spare message, as when two workers started at once
    worker_start()
    assert waiting(queue) == [] and PairRound.objects.filter(project=detector_project).count() == 2


def test_the_lock_keeps_a_second_delivery_from_running_a_job_beside_the_first(
    pairs_project: Project, admin_user: Any, settings: Any, tmp_path: Path
) -> None:
    settings.DATA_DIR = tmp_path
    make_pair_items(pairs_project, 2, round_number=None)
    job = vectors.start_vector_job(pairs_project, admin_user)
    with jobs.job_lock(job.pk) as held:
        assert held
        assert vectors.run_vector_job(job.pk).status == Job.Status.QUEUED  # returned at once, nothing done
        assert not PairItem.objects.filter(vector__isnull=False).exists()
    assert vectors.run_vector_job(job.pk).status == Job.Status.DONE
