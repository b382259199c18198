"""gunicorn's master loads the embedding model before it forks its workers (preload_app, config/gunicorn.conf.py), so
that they share one copy: the master must encode nothing and start no thread before the fork, and every worker, a
respawned one too, must answer selections as an in-process request does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from django.db import connection

from annotate import embedder
from annotate.services.tokens import create_api_token
from tests.conftest import login
from tests.e2e.worker_helpers import database_url
from tests.loopback import free_port
from tests.test_gunicorn_start import ROOT, readme_command, server_env


class CountingModel:
    def __init__(self) -> None:
        self.encoded: list[list[str]] = []

    def encode(self, texts: list[str], **options: Any) -> np.ndarray:
        self.encoded.append(texts)
        return np.ones((len(texts), 4), dtype=np.float32)


def test_a_master_that_forks_loads_the_model_at_once_and_each_worker_warms_up_after_the_fork(
    monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    model = CountingModel()
    for name, value in (("_models", {}), ("_warm", set()), ("_loaders", {}), ("_load_errors", {}),
                        ("_forks_workers", False)):
        monkeypatch.setattr(embedder, name, value)
    monkeypatch.setattr(embedder, "get_model",
                        lambda name=None: embedder._models.setdefault(name or settings.EMBEDDING_MODEL, model))
    threads, torch_threads = threading.active_count(), torch.get_num_threads()
    try:
        embedder.load_for_forked_workers()
        embedder.start_loading()  # what config/wsgi.py does as the master imports it
        assert embedder.is_loaded()
        assert model.encoded == []  # no forward pass before the fork: torch's OpenMP threads do not survive it
        assert threading.active_count() == threads  # nor a thread, which could hold a lock at the fork
        embedder.after_fork()  # gunicorn's post_fork, in the worker
        embedder._loaders[settings.EMBEDDING_MODEL].join(timeout=60)
        assert model.encoded == [["warm up"]]
        embedder.start_loading()  # warm now: nothing more to do
        assert model.encoded == [["warm up"]]
    finally:
        torch.set_num_threads(torch_threads)


def access_log_pids(path: Path) -> list[int]:
    """Worker pids of the selections answered, in order, from an access log written as "<pid> <status> <path>"."""
    pids = []
    for line in path.read_text().splitlines():
        pid, status, url = line.split()[:3]
        if url.endswith("/similarity/"):
            assert status == "200", line  # never 503 "loading": the worker had the model from the master at its fork
            pids.append(int(pid.strip("<>")))
    return pids


@pytest.mark.skipif(connection.vendor != "postgresql",
                    reason="gunicorn's workers need a database another process can open, and the test database is "
                           "SQLite in memory here: run under scripts/with-postgres.sh, as `make test` does")
@pytest.mark.django_db(transaction=True)
def test_every_worker_of_the_readme_gunicorn_answers_selections_with_the_masters_model(
    embedded: Any, sample: Any, alice: Any, tmp_path: Path
) -> None:
    start = sample.summary.index("nine weeks")
    selection = {"side": "summary", "start": start, "end": start + len("nine weeks")}
    expected = login(alice).post(f"/api/samples/{sample.pk}/similarity/", selection,
                                 content_type="application/json").json()
    token = create_api_token(alice, "gunicorn")[1]
    port = free_port()
    command = readme_command(port)
    command[command.index("--workers") + 1] = "2"  # two are enough to see the answers come from both; 2 cores here
    access_log = tmp_path / "access.log"
    command += ["--access-logfile", str(access_log), "--access-logformat", "%(p)s %(s)s %(U)s"]
    env = server_env(tmp_path)
    env.update(DATABASE_URL=database_url(), EMBEDDING_WARMUP="true")
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def answer() -> Any:
        request = urllib.request.Request(  # noqa: S310 (a loopback http URL)
            f"http://127.0.0.1:{port}/api/samples/{sample.pk}/similarity/", data=json.dumps(selection).encode(),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
            return json.load(response)

    def ask_until(seen: set[int], why: str) -> None:
        deadline = time.monotonic() + 120
        while not seen <= set(access_log_pids(access_log)):
            assert answer() == expected
            assert time.monotonic() < deadline, f"{why}: answered by {set(access_log_pids(access_log))}"

    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, "gunicorn exited"
            try:
                first = answer()
                break
            except OSError:
                assert time.monotonic() < deadline, "gunicorn did not answer"
                time.sleep(0.2)
        assert first == expected
        # The master forks its workers one after the other: on a busy machine the first answers before the second
        # exists.
        deadline = time.monotonic() + 60
        while len(workers := [int(pid) for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children")
                              .read_text().split()]) < 2:
            assert time.monotonic() < deadline, f"gunicorn has {len(workers)} worker(s), not 2"
            time.sleep(0.2)
        assert len(workers) == 2
        ask_until(set(workers), "not every worker answered")
        os.kill(workers[0], signal.SIGKILL)  # the master forks a new worker, from its loaded model again
        deadline = time.monotonic() + 60
        while True:
            now = {int(pid) for pid in Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()}
            if len(now) == 2 and workers[0] not in now:
                break
            assert time.monotonic() < deadline, "gunicorn did not replace the killed worker"
            time.sleep(0.1)
        ask_until(now, "the new worker did not answer")
    finally:
        server.terminate()
        server.wait(timeout=60)
