from __future__ import annotations

import gc
import os
from typing import Any

from celery import Celery
from celery.signals import worker_init, worker_process_init

from config.env import setting_errors_as_one_line

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("faithlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def _read_settings_or_stop(**kwargs: Any) -> None:
    """Read Django's settings before Celery does, so a bad value stops the worker with one line."""
    from django.conf import settings

    with setting_errors_as_one_line():
        settings.INSTALLED_APPS  # noqa: B018 (touching it imports the settings module)


def time_limits(hard: int, soft: int) -> dict[str, int]:
    """A task's ``time_limit`` and ``soft_time_limit``: its own, lowered to settings.CELERY_TASK_TIME_LIMIT and
    CELERY_TASK_SOFT_TIME_LIMIT where those are lower (limits set on a task win over Celery's settings)."""
    from django.conf import settings

    return {
        "time_limit": min(hard, settings.CELERY_TASK_TIME_LIMIT),
        "soft_time_limit": min(soft, settings.CELERY_TASK_SOFT_TIME_LIMIT),
    }


@worker_init.connect
def _repair_the_embedded_broker(**kwargs: Any) -> None:
    """Before the worker's consumer binds its queue: make the embedded broker's missing folders and remove an exchange
    file kombu cannot read (an empty ``celery.exchange`` after a full disk used to stop every start with a
    JSONDecodeError); config.broker, which the web's first send uses too."""
    from config import broker

    broker.repair_configured()


@worker_init.connect
def _load_the_embedding_model_before_the_pool_forks(sender: Any = None, **kwargs: Any) -> None:
    """In the worker's main process, before it forks its pool: load the embedding model, for the pool to share.

    Each pool process would otherwise load a copy of its own at its first embedding task (about 400 MiB of its own
    memory, and seconds on a busy machine); forked from a main process that holds the model, they share the weights
    and imported modules copy-on-write, with about 50 MiB each of their own (docs/performance.md, "The Celery
    worker's memory"). The rules are gunicorn's master's (config/gunicorn.conf.py, embedder.load_for_forked_workers):
    the weights load on one torch thread with no forward pass and no thread started, no database connection stays
    open, the collector's objects are frozen, and each pool process warms up after the fork (below). A process that
    billiard forks later, to replace one that stopped (--max-tasks-per-child, a crash), shares the same copy.

    Only for a pool that forks (prefork, the default): the solo and threads pools run tasks in this process, which
    loads the model at its first embedding, as before. EMBEDDING_WARMUP=false keeps the pool processes lazy too: a
    worker that never embeds (judge runs only) then takes no model at all.
    """
    from django.conf import settings

    if not settings.EMBEDDING_WARMUP or sender is None or not _pool_forks(sender):
        return
    from django.db import connections

    from annotate import embedder

    embedder.load_for_forked_workers()
    embedder.start_loading()  # at once, in this thread: the flag above
    connections.close_all()
    # Collecting in a pool process would otherwise write to the shared pages holding this process's objects and copy
    # them into it.
    gc.freeze()


def _pool_forks(worker: Any) -> bool:
    """Whether the worker's pool forks its processes from this one: prefork, started by fork (Celery's
    worker_pool_start_method, and billiard's default, spawn on macOS). A pool started by spawn is fresh interpreters,
    each loading a copy of its own at its first embedding."""
    from billiard import get_start_method

    pool = worker.pool_cls if isinstance(worker.pool_cls, str) else worker.pool_cls.__module__
    return ("prefork" in pool and getattr(worker, "pool_start_method", "fork") == "fork"
            and get_start_method() == "fork")


@worker_process_init.connect
def _warm_up_after_the_fork(**kwargs: Any) -> None:
    """In each pool process: torch's threads and the warm-up, if the main process loaded the model (embedder.after_fork,
    a no-op otherwise)."""
    from annotate import embedder

    embedder.after_fork()
