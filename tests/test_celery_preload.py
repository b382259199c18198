"""The Celery worker's main process loads the embedding model before it forks its prefork pool (config/celery.py), so
that the pool processes share one copy: the same rules as gunicorn's master (tests/test_gunicorn_preload.py). A
real prefork worker embedding with that copy: tests/e2e/test_worker_shared_model.py.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from celery.concurrency import get_implementation
from celery.signals import worker_init, worker_process_init

from annotate import embedder
from config import celery as worker_hooks
from tests.test_gunicorn_preload import CountingModel


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[CountingModel]:
    """A fake model in a fresh embedder; torch's threads and the collector's frozen objects as they were after."""
    fake = CountingModel()
    for name, value in (("_models", {}), ("_warm", set()), ("_loaders", {}), ("_load_errors", {}),
                        ("_forks_workers", False)):
        monkeypatch.setattr(embedder, name, value)
    monkeypatch.setattr(embedder, "get_model",
                        lambda name=None: embedder._models.setdefault(name or settings.EMBEDDING_MODEL, fake))
    torch_threads, frozen = torch.get_num_threads(), gc.get_freeze_count()
    yield fake
    torch.set_num_threads(torch_threads)
    if gc.get_freeze_count() != frozen:
        gc.unfreeze()


def worker(pool: str, start_method: str = "fork") -> Any:
    """What Celery passes as worker_init's sender: the WorkController, its pool class resolved as the CLI does."""
    return SimpleNamespace(pool_cls=get_implementation(pool), pool_start_method=start_method)


def test_the_hooks_are_connected_to_celerys_signals() -> None:
    assert worker_hooks._load_the_embedding_model_before_the_pool_forks in [ref() for _, ref in worker_init.receivers]
    assert worker_hooks._warm_up_after_the_fork in [ref() for _, ref in worker_process_init.receivers]


def test_a_prefork_worker_loads_the_model_before_the_fork_and_each_pool_process_warms_up_after_it(
    model: CountingModel, settings: Any
) -> None:
    settings.EMBEDDING_WARMUP = True
    threads, frozen = threading.active_count(), gc.get_freeze_count()
    worker_hooks._load_the_embedding_model_before_the_pool_forks(sender=worker("prefork"))
    assert embedder.is_loaded()
    assert model.encoded == []  # no forward pass before the fork: torch's OpenMP threads do not survive it
    assert threading.active_count() == threads  # nor a thread, which could hold a lock at the fork
    assert gc.get_freeze_count() > frozen  # the main process's objects out of the pool processes' collections
    worker_hooks._warm_up_after_the_fork()  # worker_process_init, in a pool process
    embedder._loaders[settings.EMBEDDING_MODEL].join(timeout=60)
    assert model.encoded == [["warm up"]]
    worker_hooks._warm_up_after_the_fork()  # a second call (there is none) does nothing
    assert model.encoded == [["warm up"]]


@pytest.mark.parametrize(("pool", "start_method", "warmup"),
                         [("solo", "fork", True), ("threads", "fork", True), ("prefork", "spawn", True),
                          ("prefork", "fork", False)])
def test_a_worker_that_does_not_fork_or_has_warmup_off_loads_the_model_at_its_first_embedding(
    model: CountingModel, settings: Any, pool: str, start_method: str, warmup: bool
) -> None:
    """The solo and threads pools run tasks in the main process, which gains nothing from loading first, and a pool
    started by spawn is fresh interpreters; with EMBEDDING_WARMUP=false (a worker that never embeds, judge runs only)
    no process loads the model up front."""
    settings.EMBEDDING_WARMUP = warmup
    threads, frozen = threading.active_count(), gc.get_freeze_count()
    worker_hooks._load_the_embedding_model_before_the_pool_forks(sender=worker(pool, start_method))
    worker_hooks._warm_up_after_the_fork()  # the solo pool sends worker_process_init in the main process itself
    assert not embedder.is_loaded() and embedder._loaders == {}
    assert threading.active_count() == threads and gc.get_freeze_count() == frozen
    assert embedder.embed(["A first sentence."]).shape == (1, 4)  # the first embedding loads it, as before
    assert model.encoded == [["A first sentence."]]
