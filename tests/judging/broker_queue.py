"""The embedded broker's queue folder in a test's own folder, and real kombu messages sent into it (no worker reads
them): what a starting worker reads to tell work in hand from orphaned work (judging.services.runs.locks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import connection, transaction
from kombu import Connection


def use_broker_queue(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the filesystem broker's folders at `tmp_path`; the queue folder.

    The worker-start hooks close their database connection when done, as a
    worker does; the test's connection (and the transaction around the test)
    is kept instead.
    """
    folders = {name: tmp_path / name for name in ("queue", "processed", "control")}
    for folder in folders.values():
        folder.mkdir()
    settings.CELERY_BROKER_URL = "filesystem://localhost/"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(folders["queue"]), "data_folder_out": str(folders["queue"]),
        "processed_folder": str(folders["processed"]), "control_folder": str(folders["control"]),
        "store_processed": False,
    }
    monkeypatch.setattr(connection, "close", lambda: None)
    return folders["queue"]


def messages_in(folder: Path) -> set[Path]:
    return set(folder.glob("*.msg"))


def publish(task: Any, number: int) -> Path:
    """Send `task` for `number` through kombu's filesystem transport into the test's queue folder; the message file
    written."""
    options = django_settings.CELERY_BROKER_TRANSPORT_OPTIONS
    before = messages_in(Path(options["data_folder_in"]))
    with Connection("filesystem://", transport_options=options) as broker:
        task.apply_async((number,), connection=broker)
    (written,) = messages_in(Path(options["data_folder_in"])) - before
    return written


def meet_a_starting_worker_on_each_commit(
    settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
    model: type, task: Any, resume: Callable[[], Any],
) -> dict[str, list[Any]]:
    """Each new `model` row (a run, job or set), once committed, meets a worker that starts with the broker's queue
    folder empty: `resume` (what a worker start calls) is played in an on_commit callback of the row's creation, and
    `task.delay` records its id instead of sending. What each start queued again (``resumed``) and the messages sent
    (``sent``); the tests commit for real (django_db(transaction=True))."""
    use_broker_queue(settings, tmp_path, monkeypatch)
    seen: dict[str, list[Any]] = {"resumed": [], "sent": []}
    monkeypatch.setattr(task, "delay", lambda number: seen["sent"].append(number))
    save = model.save

    def save_and_meet_a_starting_worker(self: Any, *args: Any, **kwargs: Any) -> None:
        new = self._state.adding
        save(self, *args, **kwargs)
        if new:
            transaction.on_commit(lambda: seen["resumed"].append(resume()))

    monkeypatch.setattr(model, "save", save_and_meet_a_starting_worker)
    return seen
