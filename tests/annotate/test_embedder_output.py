"""Loading the embedding model writes no progress bar: it went to gunicorn's stderr and, through Celery's redirect of
stderr, into the worker's log as WARNING lines ("Loading weights: 100%|...")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOAD = """
import os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from annotate import embedder
print(embedder.embed(["A bridge reopened."]).shape)
"""


def test_loading_the_embedding_model_prints_no_progress_bar(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "HF_", "TQDM_"))}
    env.update(FAITHLAB_DATA_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    env.pop("EMBEDDING_MODEL", None)
    loaded = subprocess.run([sys.executable, "-c", LOAD], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.strip().endswith("(1, 384)")
    assert "Loading weights" not in loaded.stderr
    assert "it/s]" not in loaded.stderr and "\r" not in loaded.stderr, loaded.stderr
