"""A cancelled job reads as "Cancelled" on the pages, by whom and when: before, the pairs project page showed a
cancelled perturbation job as "73 of 400 original texts · Failed", and the API's second cancel quoted the stored
message with its own full stop ("(Cancelled by adam at … UTC.); nothing was changed.").

The job stays "failed" in the database and the API; ``options["cancelled_by"]`` and ``options["cancelled_at"]`` tell
the pages it was cancelled. The stored message keeps the zone it was written in; the pages render the time from the
options in the current time zone (FAITHLAB_TIME_ZONE).
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Job, Project
from annotate.services import jobs
from annotate.services.pairs import perturb, rounds
from tests.conftest import login
from tests.pairs.page_helpers import text_of

pytestmark = pytest.mark.django_db

PAGE = "/projects/pairs/"
# Cancelled at 22:35:08 UTC on 30 June 2025, written while the site ran on UTC: 00:35:08 the next day in Paris.
STORED_ERROR = "Cancelled by adam at 2025-06-30 22:35:08 UTC."
CANCELLED_OPTIONS = {"seed": 1, "cancelled_by": "adam", "cancelled_at": "2025-06-30T22:35:08.123456+00:00"}
IN_PARIS = "Cancelled by adam at 2025-07-01 00:35:08 CEST."


def running_perturbation(project: Project, user: Any) -> Job:
    """A perturbation job some way through its originals, as the one in the report (73 of 400)."""
    return Job.objects.create(project=project, kind=Job.Kind.PERTURB, status=Job.Status.RUNNING, total=400, done=73,
                              created_by=user, options={"seed": 1})


def cancelled_earlier(project: Project, kind: str, **fields: Any) -> Job:
    """A job cancelled on 30 June at 22:35:08 UTC, stored as the cancel writes it."""
    return Job.objects.create(project=project, kind=kind, status=Job.Status.FAILED, total=400, done=73,
                              error=STORED_ERROR, options=dict(CANCELLED_OPTIONS), **fields)


def job_progress(page: str, job: Job) -> tuple[str, str]:
    """The job's count line ("73 of 400 original texts · Cancelled") and its cancel's words, from a page."""
    element = text_of(page, rf'(<div class="job" id="job-{job.pk}".*?</div>)')
    return (text_of(element, r'data-role="job-count">(.*?)</span>'),
            text_of(element, r'data-role="job-cancelled">(.*?)</span>'))


def test_a_cancelled_perturbation_job_shows_as_cancelled_with_who_and_when(pairs_project: Project,
                                                                           admin_user: Any) -> None:
    job = perturb.cancel_perturbation_job(running_perturbation(pairs_project, admin_user), admin_user)
    count, cancel = job_progress(login(admin_user).get(PAGE).content.decode(), job)
    assert count == "73 of 400 original texts · Cancelled"  # not "· Failed"
    assert cancel == job.error  # the site runs on UTC here: the page and the stored message agree
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.options["cancelled_by"] == "adam"


def test_the_jobs_own_poll_shows_the_cancel_too(pairs_project: Project, admin_user: Any) -> None:
    job = perturb.cancel_perturbation_job(running_perturbation(pairs_project, admin_user), admin_user)
    polled = login(admin_user).get(f"/projects/pairs/jobs/{job.pk}/").content.decode()
    assert job_progress(polled, job) == ("73 of 400 original texts · Cancelled", job.error)


def test_the_cancel_time_is_shown_in_the_sites_time_zone(pairs_project: Project, admin_user: Any,
                                                         settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    job = cancelled_earlier(pairs_project, Job.Kind.PERTURB)
    page = login(admin_user).get(PAGE).content.decode()
    assert job_progress(page, job) == ("73 of 400 original texts · Cancelled", IN_PARIS)
    assert "22:35:08 UTC" not in page  # no UTC time beside the page's local ones
    job.refresh_from_db()
    assert job.error == STORED_ERROR and job.options == CANCELLED_OPTIONS  # the stored values are kept


def test_a_cancelled_round_job_page_words_the_cancel_in_the_sites_time_zone(pairs_project: Project,
                                                                            admin_user: Any, settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    job = cancelled_earlier(pairs_project, Job.Kind.PAIR_ROUND)
    page = login(admin_user).get(f"/projects/pairs/pairs/rounds/jobs/{job.pk}/").content.decode()
    assert text_of(page, r'data-role="job-count">(.*?)</span>').endswith("· Cancelled")
    assert text_of(page, r'data-role="refusal"><p>No round was drawn: (.*?)</p>') == IN_PARIS
    assert "22:35:08 UTC" not in page


def test_an_unreadable_cancel_time_falls_back_to_the_stored_message(pairs_project: Project,
                                                                    admin_user: Any) -> None:
    job = cancelled_earlier(pairs_project, Job.Kind.PERTURB)
    job.options = {**CANCELLED_OPTIONS, "cancelled_at": "late on Monday"}
    job.save(update_fields=["options"])
    page = login(admin_user).get(PAGE).content.decode()
    assert job_progress(page, job) == ("73 of 400 original texts · Cancelled", STORED_ERROR)


def test_a_job_that_failed_on_its_own_still_shows_as_failed(pairs_project: Project, admin_user: Any) -> None:
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, status=Job.Status.FAILED, total=400,
                             done=73, error="The masked language model could not be loaded.", options={"seed": 1})
    page = login(admin_user).get(PAGE).content.decode()
    element = text_of(page, rf'(<div class="job" id="job-{job.pk}".*?</div>)')
    assert text_of(element, r'data-role="job-count">(.*?)</span>') == "73 of 400 original texts · Failed"
    assert 'data-role="job-cancelled"' not in element and job.error in element
    assert job.cancelled_by is None and job.cancelled_at is None and job.status_label == "Failed"


def test_the_api_says_once_who_cancelled_and_when_on_a_second_cancel(pairs_project: Project, admin_user: Any,
                                                                     settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    job = cancelled_earlier(pairs_project, Job.Kind.PERTURB)
    client = login(admin_user)
    answer = client.post(f"/api/projects/pairs/perturbation-jobs/{job.pk}/cancel/", content_type="application/json")
    assert answer.status_code == 409
    assert answer.json() == {"detail": f"Job {job.pk} was already cancelled by adam at 2025-07-01 00:35:08 CEST; "
                                       "nothing was changed."}
    round_job = cancelled_earlier(pairs_project, Job.Kind.PAIR_ROUND)
    refused = client.post(f"/api/projects/pairs/pair-round-jobs/{round_job.pk}/cancel/",
                          content_type="application/json")
    assert refused.status_code == 409 and ".)" not in refused.json()["detail"]
    assert refused.json()["detail"].endswith("by adam at 2025-07-01 00:35:08 CEST; nothing was changed.")
    job.refresh_from_db()
    assert job.status == Job.Status.FAILED and job.error == STORED_ERROR


def test_a_failed_jobs_refusal_quotes_its_message_without_a_second_full_stop(pairs_project: Project,
                                                                            admin_user: Any) -> None:
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_ROUND, status=Job.Status.FAILED,
                             error="The worker stopped. Start the round again.", options={})
    with pytest.raises(jobs.CancelRefused) as refusal:
        rounds.cancel_round_job(job, admin_user)
    assert str(refusal.value) == (f"Job {job.pk} has already failed (The worker stopped. Start the round again); "
                                  "nothing was changed.")
