"""Ctrl-C on `manage.py judge` (and `triage`) while calls are in flight cancels the run, as an admin's Cancel does.

Before, the command died with a KeyboardInterrupt traceback and left the run "running" for good: a new start of the
judge answered that dead run ({"existing": true}), and only a worker's restart went on with it, sending the very calls
the user had tried to stop. Now the run is cancelled ("Cancelled by command (Ctrl-C in manage.py judge) at ..."),
the calls already sent are waited for and kept (judgements, call cache), none is sent after, the command prints one
line and exits with 130. A second Ctrl-C leaves at once.

The `judge` test runs the real command in a subprocess, against a loopback endpoint that holds every answer, and
sends it SIGINT while two calls are in flight; its database is a SQLite file in a temporary data folder, read back
with sqlite3.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Project
from judging.models import Judge, Judgement, JudgeRun
from judging.services.judges import create_judge, update_judging_settings
from tests.judging.llm_server import LoopbackLLM
from tests.judging.run_factories import add_samples

ROOT = Path(__file__).resolve().parents[2]
HOLD = 3.0  # seconds the endpoint holds each answer: the Ctrl-C comes while calls are in flight


def manage(data_dir: Path, *args: str, **popen: Any) -> subprocess.Popen[str]:
    # Its own SQLite database in its own data folder, also when the suite runs on PostgreSQL (DATABASE_URL).
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    env |= {"FAITHLAB_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env, text=True,  # noqa: S603
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


def finished(process: subprocess.Popen[str], timeout: float = 120) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=timeout)
    return process.returncode, out, err


def wait_for(condition: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


SETUP = (
    "from annotate.models import Project; from tests.judging.run_factories import add_samples; "
    "add_samples(Project.objects.create(name='Demo', slug='demo'), 8)"
)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ctrl-c-data")
    for args in (("migrate", "-v0"), ("shell", "-c", SETUP)):
        code, out, err = finished(manage(folder, *args))
        assert code == 0, err
    return folder


def rows(data_dir: Path, query: str, *parameters: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(data_dir / "faithlab.sqlite3") as database:
        return database.execute(query, parameters).fetchall()


def test_ctrl_c_cancels_the_run_keeps_the_calls_in_flight_and_exits_130_without_a_traceback(data_dir: Path) -> None:
    with LoopbackLLM(delay=HOLD) as server:
        command = manage(data_dir, "judge", "--project", "demo", "--base-url", server.base_url, "--model",
                         "test-model", "--concurrency", "2", "--json")
        wait_for(lambda: server.chat_calls == 2)  # two calls in flight, six samples waiting
        command.send_signal(signal.SIGINT)
        code, out, err = finished(command)
        sent = server.chat_calls
        # A new start of the judge is a new run (not the dead one), sending only the six samples never asked.
        server.delay = 0.0
        code_again, out_again, err_again = finished(manage(
            data_dir, "judge", "--project", "demo", "--base-url", server.base_url, "--model", "test-model", "--json",
            "--quiet"))
        sent_again = server.chat_calls - sent
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert out == ""  # no JSON: the run did not finish
    last = err.strip().splitlines()[-1]
    [(run_id, status, error, cancelled_at, cancelled_by, done, total, calls)] = rows(
        data_dir, "select id, status, error, cancelled_at, cancelled_by_id, done, total, calls from judging_judgerun "
        "order by id limit 1")
    assert last.startswith(f"Run {run_id} cancelled (Ctrl-C): 2 of 8 judged"), err
    assert last.count("\n") == 0 and "6 not judged" in last
    # Cancelled as the page's Cancel words it, by the command (no user), not left running for a worker to resume.
    assert status == "failed" and cancelled_at is not None and cancelled_by is None
    assert error.startswith("Cancelled by command (Ctrl-C in manage.py judge) at ")
    # The two calls in flight were waited for and kept; nothing was sent after the Ctrl-C.
    assert sent == 2 and (done, total, calls) == (2, 8, 2)
    kept = rows(data_dir, "select status, count(*) from judging_judgement where run_id = ? group by status", run_id)
    assert kept == [("ok", 2)]
    assert rows(data_dir, "select count(*) from judging_callcache") == [(8,)]  # the six of the second run too
    # No mark is left behind (the execution left as a cancelled one, not as one killed mid-run).
    assert not (data_dir / "locks" / f"judge-run-{run_id}.executing").exists()
    assert code_again == 0, err_again
    assert sent_again == 6 and '"cached": 2' in out_again and f'"run": {run_id},' not in out_again


def test_a_second_ctrl_c_leaves_at_once_and_the_run_is_cancelled(data_dir: Path) -> None:
    with LoopbackLLM(delay=HOLD * 10) as server:  # the answers would take half a minute
        command = manage(data_dir, "judge", "--project", "demo", "--base-url", server.base_url, "--model",
                         "test-model", "--score-only", "--concurrency", "2", "--quiet")
        wait_for(lambda: server.chat_calls == 2)
        command.send_signal(signal.SIGINT)
        time.sleep(1.0)  # the first is noticed (the run is cancelled), then the second
        command.send_signal(signal.SIGINT)
        code, out, err = finished(command, timeout=20)  # well before the answers come
    assert code == 130, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("Stopped (Ctrl-C twice) without waiting for the calls in flight")
    [(status, error)] = rows(data_dir, "select status, error from judging_judgerun order by id desc limit 1")
    assert status == "failed" and error.startswith("Cancelled by command (Ctrl-C in manage.py judge) at ")


# ----------------------------------------------------------------------------- triage, in this process


def ctrl_c_when(condition: Any) -> threading.Thread:
    """SIGINT to this process once ``condition`` holds (the command under test runs in the main thread)."""

    def watch() -> None:
        wait_for(condition)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


@pytest.mark.django_db
def test_ctrl_c_in_triage_cancels_the_first_pass_and_starts_no_explainer(project: Project) -> None:
    add_samples(project, 8)
    with LoopbackLLM(delay=HOLD) as server:
        first = create_judge(project, name="cheap", kind="rubric", base_url=server.base_url, model="test-model",
                             with_reasoning=False, concurrency=2, max_retries=0)
        explainer = create_judge(project, name="strong", kind="rubric", base_url=server.base_url,
                                 model="test-model", concurrency=2, max_retries=0)
        update_judging_settings(project, first_pass=first.pk, explainer=explainer.pk)
        watcher = ctrl_c_when(lambda: server.chat_calls >= 2)
        with pytest.raises(SystemExit) as stopped:
            call_command("triage", "--project", project.slug, "--quiet")
        watcher.join()
        assert stopped.value.code == 130
        sent = server.chat_calls
    run = JudgeRun.objects.get()
    assert run.judge == first and run.cancelled and run.canceller_name == "command (Ctrl-C in manage.py triage)"
    assert run.error.startswith("Cancelled by command (Ctrl-C in manage.py triage) at ")
    assert run.status_label == "Cancelled"
    assert sent == 2 == run.done == Judgement.objects.count()  # the calls in flight kept, nothing sent after
    assert not JudgeRun.objects.filter(judge=explainer).exists()
    assert Judge.objects.count() == 2
