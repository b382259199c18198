"""Two `make run`s on one data folder: the second is refused in one line naming the folder and the first's pid (both
workers would take tasks from the one broker queue); one on another data folder starts as before."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

from tests.loopback import free_port
from tests.test_run_script import ROOT, SCRIPT, STARTUP_LIMIT_S, dev_env, kill_leftovers  # noqa: F401, F811 (a fixture)


def test_a_second_run_on_the_same_data_folder_is_refused_naming_the_folder_and_the_first(
    dev_env: dict[str, str], tmp_path_factory: object  # noqa: F811 (the fixture imported above)
) -> None:
    lines: list[str] = []
    first = subprocess.Popen(  # noqa: S603
        [str(SCRIPT)], cwd=ROOT, env=dev_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)
    assert first.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(first.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    pids: list[int] = []
    try:
        deadline = time.monotonic() + STARTUP_LIMIT_S
        while not (started := re.search(r"run-dev: worker \(pid (\d+)\) and web server \(pid (\d+)\) started",
                                         "".join(lines))):
            assert first.poll() is None, "".join(lines)
            assert time.monotonic() < deadline, "".join(lines)
            time.sleep(0.2)
        pids = [int(started[1]), int(started[2])]

        second = subprocess.run([str(SCRIPT)], cwd=ROOT, env=dict(dev_env, PORT=str(free_port())),  # noqa: S603
                                capture_output=True, text=True, timeout=60)
        assert second.returncode == 1, second.stdout + second.stderr
        folder = os.path.realpath(dev_env["FAITHLAB_DATA_DIR"])
        assert second.stderr.strip().splitlines() == [
            f"run-dev: {folder} is in use by another run-dev (pid {first.pid}): stop that one first, or set "
            "FAITHLAB_DATA_DIR to another folder"], second.stderr
        assert "started" not in second.stdout  # no worker of its own beside the first's
        assert first.poll() is None  # the first goes on

        # Another data folder is not held by the first: this one starts, and stops only because its port is taken.
        other = Path(str(tmp_path_factory.mktemp("other")))  # type: ignore[attr-defined]
        env = dict(dev_env, FAITHLAB_DATA_DIR=str(other), DATABASE_URL=f"sqlite:///{other / 'dev.sqlite3'}",
                   PORT=str(free_port()))
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", int(env["PORT"])))
            taken.listen()
            third = subprocess.run([str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True,
                                   timeout=STARTUP_LIMIT_S)
        assert "is in use by another run-dev" not in third.stderr, third.stderr
        assert re.search(r"run-dev: worker \(pid \d+\) and web server \(pid \d+\) started", third.stdout), third.stdout
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGTERM)
            try:
                first.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        kill_leftovers(first, pids)
        reader.join(timeout=5)
