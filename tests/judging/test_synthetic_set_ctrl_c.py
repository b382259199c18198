"""Ctrl-C on `manage.py synthetic_set --writer-judge` while rewrites are in flight cancels the set, as its page's
Cancel does.

Before, the command died with a KeyboardInterrupt traceback and left the set "running" for good: its page showed it
running with no worker on it, its name stayed taken, and only a worker's restart went on with it, sending the very
calls the user had tried to stop. Now the set is cancelled ("Cancelled by command (Ctrl-C in manage.py
synthetic_set) at ...", the words the `judge` command's Ctrl-C uses), the calls already sent are waited for and
their rewrites kept, none is sent after, the command prints one line on stderr and exits with 130. A second Ctrl-C
leaves at once.

The command runs in a subprocess against a loopback endpoint that holds every answer, as in test_judge_ctrl_c.py;
its database is a SQLite file in a temporary data folder, read back with sqlite3.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.judging.llm_server import LoopbackLLM
from tests.judging.synthetic_scene import writer_script
from tests.judging.test_judge_ctrl_c import finished, manage, rows, wait_for

HOLD = 3.0  # seconds the endpoint holds each answer: the Ctrl-C comes while calls are in flight


def scene(data_dir: Path, base_url: str) -> None:
    setup = (
        "from annotate.models import Project; from tests.judging.synthetic_scene import add_outputs, writer_judge; "
        "project = Project.objects.create(name='Demo', slug='demo'); add_outputs(project); "
        f"writer_judge(project, {base_url!r}, concurrency=2)"
    )
    for args in (("migrate", "-v0"), ("shell", "-c", setup)):
        code, out, err = finished(manage(data_dir, *args))
        assert code == 0, err


def test_ctrl_c_cancels_the_set_keeps_the_rewrites_in_flight_and_exits_130_without_a_traceback(
    tmp_path: Path,
) -> None:
    with LoopbackLLM(script=writer_script(), delay=HOLD) as server:
        scene(tmp_path, server.base_url)
        command = manage(tmp_path, "synthetic_set", "--project", "demo", "--name", "cli", "--writer-judge", "writer")
        wait_for(lambda: server.chat_calls == 2)  # two calls in flight, eighteen waiting
        command.send_signal(signal.SIGINT)
        code, out, err = finished(command)
        sent = server.chat_calls
    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert out == ""  # no summary: the set did not finish
    [(set_id, status, error, cancelled_at, cancelled_by, done, total)] = rows(
        tmp_path, "select id, status, error, cancelled_at, cancelled_by_id, done, total from judging_syntheticset")
    # One line of its own (above it, only the log's lines).
    assert err.strip().splitlines()[-1] == (
        f"Set {set_id} cancelled (Ctrl-C): 2 of 20 rewrites stored (the answers of the calls in flight included), "
        "18 not asked. They are kept: Resume on the set's page asks only for the rest.")
    # Cancelled as the page's Cancel words it, by the command (no user), not left running for a worker to resume.
    assert status == "failed" and cancelled_at is not None and cancelled_by is None
    assert error.splitlines()[-1].startswith("Cancelled by command (Ctrl-C in manage.py synthetic_set) at ")
    # The two calls in flight were waited for and kept; nothing was sent after the Ctrl-C; no item
    # was built but the gold ones the set was made with.
    assert sent == 2 and (done, total) == (2, 20)
    assert rows(tmp_path, "select status, count(*) from judging_syntheticrewrite group by status") == [("ok", 2)]
    assert rows(tmp_path, "select type, count(*) from judging_syntheticitem group by type") == [("gold", 2)]


def test_a_second_ctrl_c_leaves_the_set_cancelled_at_once(tmp_path: Path) -> None:
    with LoopbackLLM(script=writer_script(), delay=HOLD * 10) as server:  # the answers would take half a minute
        scene(tmp_path, server.base_url)
        command = manage(tmp_path, "synthetic_set", "--project", "demo", "--name", "cli", "--writer-judge", "writer")
        wait_for(lambda: server.chat_calls == 2)
        command.send_signal(signal.SIGINT)
        time.sleep(1.0)  # the first is noticed (the set is cancelled), then the second
        command.send_signal(signal.SIGINT)
        code, out, err = finished(command, timeout=20)  # well before the answers come
    assert code == 130, err
    assert "Traceback" not in err
    [(set_id, status, error)] = rows(tmp_path, "select id, status, error from judging_syntheticset")
    assert err.strip().splitlines()[-1] == (
        "Stopped (Ctrl-C twice) without waiting for the calls in flight: their answers are not stored; set "
        f"{set_id} is cancelled, 0 of 20 rewrites stored (kept).")
    assert status == "failed"
    assert error.splitlines()[-1].startswith("Cancelled by command (Ctrl-C in manage.py synthetic_set) at ")

