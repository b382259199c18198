"""What a process loads when it starts: the web server's URLs and the worker's tasks, without the heavy SDKs.

The openai SDK is ~500 modules: imported at start it cost every process about a second to start (runserver, the
Celery worker, each manage.py command) and about as much again to tear down, which made `make run`'s Ctrl-C stop
slower. judging.clients imports it at its first call instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns  # every view module, as the first request loads them
from config.celery import app
app.loader.import_default_modules()  # every tasks module, as the worker loads them
print(",".join(name for name in ("openai", "torch", "transformers", "sentence_transformers", "spacy")
               if name in sys.modules))
"""


def test_the_web_and_worker_modules_load_without_the_llm_sdk_or_model_libraries(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(FAITHLAB_DATA_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    probe = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=120)
    assert probe.returncode == 0, probe.stderr
    loaded = probe.stdout.strip().splitlines()[-1] if probe.stdout.strip() else ""
    assert loaded == "", f"loaded at start: {loaded}"
