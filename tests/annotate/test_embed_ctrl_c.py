"""Ctrl-C on `manage.py embed` while it embeds in the foreground cancels its job, as the project page's Cancel does.

Before, the command died with a KeyboardInterrupt traceback and left its job "running" for good: the project page
showed it running with nobody on it, and only a worker's restart went on with it. Now the job is cancelled after the
texts in hand ("Cancelled by command (Ctrl-C in manage.py embed) at ...", the words the `judge` command's Ctrl-C
uses), the texts embedded stay, the command prints one line on stderr and exits with 130, and a new `embed` does the
rest. A second Ctrl-C leaves at once.

The command runs in a subprocess (its main thread gets the real SIGINT); each group of texts is held a moment before
it is embedded, so that the Ctrl-C comes mid-job. Its database is a SQLite file in a temporary data folder, read back
with sqlite3.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.judging.test_judge_ctrl_c import ROOT, finished, manage, rows, wait_for

HOLD = 1.5  # seconds each group of texts waits before it is embedded

# `manage.py embed ...` with each group of texts held HOLD seconds first (the args follow the script).
SLOW_EMBED = f"""
import sys, time, django
django.setup()
from annotate.services import embedding
real = embedding._embed_rows
def held(*args, **kwargs):
    time.sleep({HOLD})
    return real(*args, **kwargs)
embedding._embed_rows = held
from django.core.management import execute_from_command_line
execute_from_command_line(["manage.py", *sys.argv[1:]])
"""

SETUP = (
    "from annotate.models import Project; from tests.judging.run_factories import add_samples; "
    "add_samples(Project.objects.create(name='Demo', slug='demo'), 150)"  # 15 passages, 150 samples: 4 groups
)


def slow_embed(data_dir: Path, *args: str) -> subprocess.Popen[str]:
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    env |= {"FAITHLAB_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-c", SLOW_EMBED, "embed", *args], cwd=ROOT, env=env,  # noqa: S603
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def scene(data_dir: Path) -> None:
    for args in (("migrate", "-v0"), ("shell", "-c", SETUP)):
        code, out, err = finished(manage(data_dir, *args))
        assert code == 0, err


def job_row(data_dir: Path) -> Any:
    return rows(data_dir, "select id, status, error, options, done, total from annotate_job order by id desc limit 1")


def test_ctrl_c_cancels_the_embedding_job_keeps_the_texts_embedded_and_exits_130(tmp_path: Path) -> None:
    scene(tmp_path)
    command = slow_embed(tmp_path, "--project", "demo")
    wait_for(lambda: (job := job_row(tmp_path)) and job[0][4] > 0)  # the first group is stored
    command.send_signal(signal.SIGINT)
    code, out, err = finished(command)
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    [(job_id, status, error, options, done, total)] = job_row(tmp_path)
    assert err.strip().splitlines()[-1] == (
        f"Job {job_id} cancelled (Ctrl-C): {done} of {total} texts embedded, {total - done} not. The texts embedded "
        "stay; `manage.py embed --project demo` embeds the rest.")
    # Cancelled as the page's Cancel words it, in the command's name, not left running for a worker to resume.
    assert status == "failed" and error.startswith("Cancelled by command (Ctrl-C in manage.py embed) at ")
    assert '"cancelled_by": "command (Ctrl-C in manage.py embed)"' in options
    assert 0 < done < total == 165
    embedded = rows(tmp_path, "select count(*) from annotate_sample where embedding_model != ''")[0][0]
    embedded += rows(tmp_path, "select count(*) from annotate_passage where embedding_model != ''")[0][0]
    assert embedded == done  # each group whole: its texts and its count in one transaction
    # A new start is not refused nor answered with the dead job: a new job embeds the rest.
    code, out, err = finished(manage(tmp_path, "embed", "--project", "demo"))
    assert code == 0, err
    assert f"Embedding {total - done} text(s) of demo" in out and "Done:" in out
    assert rows(tmp_path, "select status from annotate_job order by id") == [("failed",), ("done",)]


def test_a_second_ctrl_c_leaves_at_once_and_the_job_is_cancelled(tmp_path: Path) -> None:
    scene(tmp_path)
    command = slow_embed(tmp_path, "--project", "demo")
    wait_for(lambda: (job := job_row(tmp_path)) and job[0][4] > 0)
    command.send_signal(signal.SIGINT)
    time.sleep(0.2)  # well inside the group in hand: the first is not noticed yet
    command.send_signal(signal.SIGINT)
    code, out, err = finished(command, timeout=20)
    assert code == 130, err
    assert "Traceback" not in err
    [(job_id, status, error, options, done, total)] = job_row(tmp_path)
    assert err.strip().splitlines()[-1] == (
        f"Stopped (Ctrl-C twice); job {job_id} is cancelled, {done} of {total} done (kept).")
    assert status == "failed" and error.startswith("Cancelled by command (Ctrl-C in manage.py embed) at ")
