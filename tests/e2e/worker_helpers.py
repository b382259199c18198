"""A real Celery worker for end-to-end tests: started on the test database, stopped afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from annotate.models import Job

ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"].endswith("postgresql"):
        auth = db["USER"] + (f":{db['PASSWORD']}" if db["PASSWORD"] else "")
        return f"postgres://{auth}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    name = str(db["NAME"])
    if "memory" in name:
        pytest.fail("the worker needs a database another process can open: run `make test` (PostgreSQL)")
    return f"sqlite:///{name}"


@pytest.fixture
def worker() -> Iterator[subprocess.Popen]:
    env = {**os.environ, "DATABASE_URL": database_url(), "FAITHLAB_DATA_DIR": str(settings.DATA_DIR)}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=info",
         "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    yield process
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()


def wait_for(job: Job, worker: subprocess.Popen, seconds: float = 180) -> Job:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if job.status in (Job.Status.DONE, Job.Status.FAILED):
            return job
        if worker.poll() is not None:
            pytest.fail(f"worker exited early:\n{worker.stdout.read() if worker.stdout else ''}")
        time.sleep(0.5)
    worker.terminate()
    pytest.fail(f"job {job.pk} still {job.status} after {seconds}s:\n{worker.stdout.read() if worker.stdout else ''}")
