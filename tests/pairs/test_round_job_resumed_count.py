"""A pairs round job killed mid-draw counts its resumption (``options["resumed"]``, annotate.services.jobs.recovery)
and keeps it through the options the job writes itself (when its attempt began, the round it drew); its page and the
pairs project page say it, as a span project's job lines do (tests/annotate/test_job_resumed_count.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from annotate import tasks
from annotate.models import Job, PairRound, Project
from annotate.services.pairs import rounds
from annotate.services.pairs.rounds import job as round_job_module
from tests.annotate.job_queue import (
    deliver_all,
    job_queue_fixture,  # noqa: F401  (the queue fixture)
    kill_on_call,
    queued_again_at_worker_start,
    run_until_killed,
)
from tests.conftest import login

pytestmark = pytest.mark.django_db

ROUND_TWO = {"size": 4, "low": 0.0, "high": 1.0, "paraphrase_max": 1.0, "drop_fraction": 0.0}
RESUMED_LINE = re.compile(r'data-role="job-resumed">(Resumed .*?)</span>', re.S)


def test_a_killed_round_job_counts_its_resumption_and_keeps_it_through_its_own_options(
    detector_project: Project, admin_user: Any, queue: Path, monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    job = rounds.start_round_job(detector_project, admin_user, number=2, seed=3, **ROUND_TWO)
    kill_on_call(monkeypatch, round_job_module, "create_round", 1)  # killed while writing the round
    run_until_killed(tasks.create_pair_round, job)
    assert job.resumed == 0 and "started_at" in job.options

    queued_again_at_worker_start(queue, tasks.create_pair_round, job)
    job.refresh_from_db()
    assert job.resumed == 1 and job.resumed_at is not None
    expected = f"Resumed 1 time after its worker stopped (last at {job.resumed_at:%Y-%m-%d %H:%M:%S} UTC)."
    admin = login(admin_user)
    # Its own page while it waits for the next worker, and its line on the project page.
    for url in (f"/projects/{detector_project.slug}/pairs/rounds/jobs/{job.pk}/", f"/projects/{detector_project.slug}/"):
        assert RESUMED_LINE.search(admin.get(url).content.decode()).group(1) == expected, url

    deliver_all(queue, django_capture_on_commit_callbacks)
    job.refresh_from_db()
    drawn = PairRound.objects.get(project=detector_project, number=2)
    assert job.status == Job.Status.DONE and job.options["round_id"] == drawn.pk
    assert job.resumed == 1  # the job's own writes of its options (its start, its round) kept the count
    body = admin.get(f"/api/projects/{detector_project.slug}/jobs/{job.pk}/").json()
    assert body["resumed"] == 1 and body["resumed_at"].startswith(f"{job.resumed_at:%Y-%m-%dT%H:%M:%S}")
    assert RESUMED_LINE.search(admin.get(f"/projects/{detector_project.slug}/").content.decode()).group(1) == expected
