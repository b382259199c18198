"""Scenarios run in a process of their own (its own SQLite file and embedded broker, the embedded default's settings),
for tests/annotate/test_broker_trouble.py. Each prints one JSON line, what the test checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _setup() -> Any:
    import django

    django.setup()
    from django.core.management import call_command

    from annotate.models import Batch, Passage, Project, Sample

    call_command("migrate", verbosity=0)
    project = Project.objects.create(name="Broker", slug="broker")
    batch = Batch.objects.create(project=project, name="b1")
    passage = Passage.objects.create(project=project, external_id="p1", text="The bridge reopened. It is old.")
    for position in range(3):
        Sample.objects.create(project=project, passage=passage, batch=batch, position=position,
                              summary=f"Summary {position} says the bridge reopened. It cost {position} million.")
    return project


def _exchange_file() -> Path:
    from django.conf import settings

    return Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["control_folder"]) / "celery.exchange"


def empty_exchange_then_a_real_worker() -> None:
    """A 0-byte celery.exchange (a full disk at a worker's start): the web's send and a real worker's start repair
    it, and the worker embeds the job."""
    project = _setup()
    from annotate.models import Job
    from annotate.services import embedding

    _exchange_file().write_bytes(b"")
    job = embedding.queue_embedding(project)  # the web's send
    job.refresh_from_db()
    sent = {"status": job.status, "error": job.error}
    _exchange_file().write_bytes(b"")  # and empty again before the worker starts
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool=solo", "--loglevel=info",
         "--without-heartbeat", "--without-gossip", "--without-mingle"],
        cwd=ROOT, env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    deadline = time.monotonic() + 150
    try:
        while time.monotonic() < deadline and worker.poll() is None:
            job.refresh_from_db()
            if job.status in (Job.Status.DONE, Job.Status.FAILED):
                break
            time.sleep(0.5)
    finally:
        alive = worker.poll() is None
        worker.terminate()
        try:
            output, _ = worker.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            output, _ = worker.communicate()
    job.refresh_from_db()
    print(json.dumps({"sent": sent, "status": job.status, "done": job.done, "total": job.total, "error": job.error,
                      "worker_alive": alive, "exchange": _exchange_file().read_text(),
                      "worker_tail": output[-3000:]}))


def locked_database_then_released() -> None:
    """An embedding slice finds SQLite locked by another connection for longer than the busy timeout (lowered to
    0.2 s); the lock is let go after 1.5 s. The slice is queued again after a delay and the job ends done. The
    worker is this process: each task sent is run here, after its countdown."""
    import sqlite3

    project = _setup()
    from django.conf import settings
    from django.db import connection

    from annotate import embedder, tasks
    from annotate.services import embedding

    embedding.LOCKED_RETRY_SECONDS = (0.5, 1, 2)
    sent: list[tuple[int, float]] = []

    def apply_async(args: tuple[int], countdown: float | None = None, **kwargs: Any) -> None:
        sent.append((args[0], countdown or 0))

    tasks.embed_project_texts.delay = lambda number: apply_async((number,))
    tasks.embed_project_texts.apply_async = apply_async
    job = embedding.queue_embedding(project)
    connection.settings_dict["OPTIONS"]["timeout"] = 0.2
    connection.close()
    holder = sqlite3.connect(settings.DATABASES["default"]["NAME"], isolation_level=None, check_same_thread=False)
    real_embed = embedder.embed
    calls: list[int] = []

    def embed_then_lock(pieces: list[str], model: str) -> Any:
        # Mid-job, after the first text's vectors are computed: another process takes the database for 1.5 s, so
        # this text's write finds it locked.
        vectors = real_embed(pieces, model)  # the model loads at the first call: the lock is taken after it
        calls.append(1)
        if len(calls) == 1:
            holder.execute("BEGIN IMMEDIATE")
            threading.Timer(1.5, lambda: holder.execute("COMMIT")).start()
        return vectors

    embedder.embed = embed_then_lock
    ran: list[float] = []
    while sent and len(ran) < 20:
        number, countdown = sent.pop(0)
        time.sleep(countdown)
        ran.append(countdown)
        try:
            tasks.embed_project_texts(number)
        except Exception as error:  # noqa: BLE001 - reported below
            ran.append(-1)
            print(f"task raised {type(error).__name__}: {error}", file=sys.stderr)
    job.refresh_from_db()
    print(json.dumps({"status": job.status, "done": job.done, "total": job.total, "error": job.error,
                      "options": job.options, "countdowns": ran, "embed_calls": len(calls)}))
