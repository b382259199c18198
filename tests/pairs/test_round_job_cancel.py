"""Cancelling a pairs round job that no worker runs: before, a job stuck in "queued" (no worker) or "running" (its
worker died) blocked every later round of the project for ever, and nothing in the app could end it.

Jobs stay queued here: the tests run in a transaction, so start_round_job's on-commit queuing never fires.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Job, Membership, PairRound, Project
from annotate.services.pairs import rounds, vectors
from tests.conftest import login, make_user
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import HTMX, WIZARD, text_of

ROUND_TWO = {"size": 4, "low": 0.0, "high": 1.0, "paraphrase_max": 1.0, "drop_fraction": 0.0}
CANCELLED = re.compile(r"Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.")


def job_page(job: Job) -> str:
    return f"/projects/pairs/pairs/rounds/jobs/{job.pk}/"


def cancel_url(job: Job) -> str:
    return f"/projects/pairs/pairs/rounds/jobs/{job.pk}/cancel/"


def api_cancel_url(job: Job) -> str:
    return f"/api/projects/pairs/pair-round-jobs/{job.pk}/cancel/"


def member(project: Project, name: str, role: str) -> Any:
    user = make_user(name)
    Membership.objects.create(project=project, user=user, role=role)
    return user


def snapshot(job: Job) -> tuple[Any, ...]:
    job.refresh_from_db()
    return job.status, job.error, job.finished_at, job.options, job.done, job.total


@pytest.fixture
def queued_job(pairs_project: Project, admin_user: Any) -> Job:
    """Round 1's job, queued and never run (no worker)."""
    make_pair_items(pairs_project, 8, round_number=None)
    return rounds.start_round_job(pairs_project, admin_user, size=3, seed=1)


@pytest.mark.django_db
def test_cancelling_a_queued_job_from_the_wizard_lets_a_new_round_start(pairs_project: Project, admin_user: Any,
                                                                       queued_job: Job) -> None:
    client = login(admin_user)
    wizard = client.get(WIZARD).content.decode()
    assert f'action="{cancel_url(queued_job)}"' in wizard and 'data-role="cancel-round-job"' in wizard

    response = client.post(cancel_url(queued_job), {"back": "wizard"})
    assert response.status_code == 302 and response["Location"] == WIZARD
    queued_job.refresh_from_db()
    assert queued_job.status == Job.Status.FAILED and queued_job.finished_at is not None
    assert CANCELLED.fullmatch(queued_job.error), queued_job.error
    assert queued_job.options["cancelled_by"] == "adam" and queued_job.options["cancelled_at"]
    after = client.get(WIZARD).content.decode()
    assert 'data-role="round-job-busy"' not in after
    assert f"Job {queued_job.pk} is cancelled: it draws no round. You can start a new round now." in after

    # A worker that picks the cancelled job up later draws nothing and keeps the cancel's message.
    assert rounds.run_round_job(queued_job.pk).error == queued_job.error
    assert not PairRound.objects.exists()
    again = rounds.start_round_job(pairs_project, admin_user, size=3, seed=2)
    assert rounds.run_round_job(again.pk).status == Job.Status.DONE
    assert list(PairRound.objects.values_list("number", flat=True)) == [1]


@pytest.mark.django_db
def test_the_cancel_over_htmx_redirects_the_page_to_the_job(pairs_project: Project, admin_user: Any,
                                                             queued_job: Job) -> None:
    client = login(admin_user)
    assert client.get(cancel_url(queued_job)).status_code == 405
    response = client.post(cancel_url(queued_job), **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == job_page(queued_job)
    page = client.get(job_page(queued_job)).content.decode()
    assert CANCELLED.fullmatch(text_of(page, r'data-role="refusal"><p>No round was drawn: (.*?)</p>'))
    assert text_of(page, r'data-role="job-count">(.*?)</span>').endswith("· Cancelled")  # not "Failed"


@pytest.mark.django_db
def test_only_the_projects_admins_may_cancel(pairs_project: Project, queued_job: Job, alice: Any,
                                             charlie: Any) -> None:
    before = snapshot(queued_job)
    auditor = member(pairs_project, "audra", Membership.Role.AUDITOR)
    for user in (auditor, alice):
        assert login(user).post(cancel_url(queued_job)).status_code == 403
        assert login(user).post(api_cancel_url(queued_job), {}, content_type="application/json").status_code == 403
    # An outsider learns nothing about the project, even with a body the API would refuse.
    assert login(charlie).post(cancel_url(queued_job)).status_code == 404
    assert login(charlie).post(api_cancel_url(queued_job), {"stray": 1},
                               content_type="application/json").status_code == 404
    assert snapshot(queued_job) == before


@pytest.mark.django_db
def test_cancelling_a_done_job_is_refused_and_changes_nothing(pairs_project: Project, admin_user: Any,
                                                              queued_job: Job) -> None:
    assert rounds.run_round_job(queued_job.pk).status == Job.Status.DONE
    before = snapshot(queued_job)
    message = f"Job {queued_job.pk} is done (it drew round 1); there is nothing to cancel and nothing was changed."
    with pytest.raises(rounds.CancelRefused, match=re.escape(message)):
        rounds.cancel_round_job(queued_job, admin_user)

    client = login(admin_user)
    followed = client.post(cancel_url(queued_job), follow=True)
    assert followed.redirect_chain[-1][0] == "/projects/pairs/pairs/rounds/1/"  # the done job's page opens its round
    assert f"Not cancelled: {message}" in followed.content.decode()
    answer = client.post(api_cancel_url(queued_job), {}, content_type="application/json")
    assert answer.status_code == 409 and answer.json() == {"detail": message}
    assert snapshot(queued_job) == before
    assert PairRound.objects.get().status == PairRound.Status.OPEN


@pytest.mark.django_db
def test_a_job_cancelled_twice_says_so_the_second_time(pairs_project: Project, admin_user: Any,
                                                       queued_job: Job) -> None:
    client = login(admin_user)
    first = client.post(api_cancel_url(queued_job), content_type="application/json")
    assert first.status_code == 200
    body = first.json()
    assert body["status"] == "failed" and body["cancelled_by"] == "adam" and body["round"] == 1
    assert CANCELLED.fullmatch(body["error"]) and body["created_by"] == "adam" and body["finished_at"]
    before = snapshot(queued_job)
    second = client.post(api_cancel_url(queued_job), content_type="application/json")
    assert second.status_code == 409
    cancel = body["error"].removeprefix("Cancelled ").removesuffix(".")  # "by adam at <time> UTC", one full stop
    assert second.json()["detail"] == f"Job {queued_job.pk} was already cancelled {cancel}; nothing was changed."
    assert snapshot(queued_job) == before


@pytest.mark.django_db
def test_a_job_cancelled_while_its_vectors_were_computed_draws_no_round(detector_project: Project, admin_user: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    job = rounds.start_round_job(detector_project, admin_user, number=2, seed=3, **ROUND_TWO)

    def cancelled_meanwhile(project: Project, **_: Any) -> int:
        # What another request's cancel commits while the worker computes vectors; no progress call follows.
        assert Job.objects.get(pk=job.pk).status == Job.Status.RUNNING
        Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error="Cancelled by bea at noon.",
                                             finished_at=timezone.now())
        return 0

    monkeypatch.setattr(vectors, "compute_vectors", cancelled_meanwhile)
    ended = rounds.run_round_job(job.pk)
    assert ended.status == Job.Status.FAILED and ended.error == "Cancelled by bea at noon."
    assert not PairRound.objects.filter(project=detector_project, number=2).exists()
    assert PairRound.objects.get(project=detector_project, number=1).status == PairRound.Status.CLOSED


@pytest.mark.django_db
def test_a_cancel_seen_by_the_vectors_progress_stops_the_job(detector_project: Project, admin_user: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    job = rounds.start_round_job(detector_project, admin_user, number=2, seed=3, **ROUND_TWO)
    chunks_after_cancel: list[int] = []

    def compute(project: Project, *, encoder: str, progress: Any) -> int:
        progress(1)
        rounds.cancel_round_job(Job.objects.get(pk=job.pk), admin_user)
        progress(1)  # the chunk written while the cancel landed: the job stops here
        chunks_after_cancel.append(1)
        return 2

    monkeypatch.setattr(vectors, "compute_vectors", compute)
    ended = rounds.run_round_job(job.pk)
    assert chunks_after_cancel == []
    assert ended.status == Job.Status.FAILED and CANCELLED.fullmatch(ended.error)
    assert not PairRound.objects.filter(project=detector_project, number=2).exists()


@pytest.mark.django_db
def test_the_job_page_offers_the_cancel_while_the_job_is_queued_or_running(pairs_project: Project,
                                                                           admin_user: Any,
                                                                           queued_job: Job) -> None:
    client = login(admin_user)
    page = client.get(job_page(queued_job)).content.decode()
    assert 'data-role="cancel-round-job"' in page and f'hx-post="{cancel_url(queued_job)}"' in page
    assert "It will draw no round, even if a worker picks it up later, and a new round can then be started" in page
    assert re.search(r"Queued for \d+ seconds?", text_of(page, r'data-role="round-job-wait">(.*?)</p>'))
    assert 'data-role="no-worker"' not in page  # just queued: a worker may not have had time yet

    Job.objects.filter(pk=queued_job.pk).update(
        status=Job.Status.RUNNING,
        options={**queued_job.options, "started_at": (timezone.now() - timedelta(minutes=5)).isoformat()})
    polled = client.get(job_page(queued_job), **HTMX).content.decode()  # the page's own poll
    assert 'data-role="cancel-round-job"' in polled
    assert text_of(polled, r'data-role="round-job-wait">(.*?)\(').startswith("Running for 5")

    # An auditor reviews the project's rounds but may not see the job page, nor its button.
    auditor = member(pairs_project, "audra", Membership.Role.AUDITOR)
    assert login(auditor).get(job_page(queued_job)).status_code == 403
    rounds.cancel_round_job(queued_job, admin_user)
    ended = client.get(job_page(queued_job)).content.decode()
    assert 'data-role="cancel-round-job"' not in ended and 'data-role="round-job-wait"' not in ended


@pytest.mark.django_db
def test_a_job_queued_over_a_minute_says_no_worker_may_be_running(pairs_project: Project, admin_user: Any,
                                                                  queued_job: Job) -> None:
    Job.objects.filter(pk=queued_job.pk).update(created_at=timezone.now() - timedelta(minutes=3))
    client = login(admin_user)
    for page in (client.get(job_page(queued_job)).content.decode(), client.get(WIZARD).content.decode()):
        assert text_of(page, r'data-role="round-job-wait">(.*?)\(').startswith("Queued for 3")
        hint = text_of(page, r'data-role="no-worker">(.*?)</p>')
        assert " ".join(hint.split()).startswith("No worker has taken it for 3 minutes: no worker may be running, "
                                                 "or its pool may be stuck (README, Deploying for real, step 6).")
        assert ".venv/bin/celery -A config worker" in hint and "make run" in hint


@pytest.mark.django_db
def test_the_schema_describes_the_cancel(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/{slug}/pair-round-jobs/{id}/cancel/"]["post"]
    assert {"200", "400", "403", "404", "409"} <= set(operation["responses"])
    assert "already ended" in operation["responses"]["409"]["description"]
    schema = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert set(document["components"]["schemas"][schema]["properties"]) == {
        "id", "status", "round", "error", "created_by", "created_at", "finished_at", "cancelled_by"}
