"""The README's gunicorn command (Deploying for real, step 5), run for real: a bad setting stops it with one line.

Without config/gunicorn.conf.py each of the four workers read the settings and printed the line, and the master,
reaping workers while it halted, could end in HaltServer tracebacks and exit status 1. The master now reads the
settings once, before it boots any worker.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

from tests.loopback import answers, free_port

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def readme_command(port: int) -> list[str]:
    """Step 5's command as the README writes it, on a free loopback port."""
    readme = (ROOT / "README.md").read_text()
    [command] = re.findall(r"^5\. Web: `(\.venv/bin/gunicorn [^`]+)`", readme, flags=re.MULTILINE)
    words = shlex.split(command)
    words[0] = str(BIN / "gunicorn")
    words[words.index("--bind") + 1] = f"127.0.0.1:{port}"
    return words


def server_env(tmp_path: Path, **values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "CELERY_"))}
    env.pop("DEBUG", None)
    env.update(FAITHLAB_DATA_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
               EMBEDDING_WARMUP="false", **values)
    return env


def test_a_bad_setting_stops_the_readme_gunicorn_with_one_line(tmp_path: Path) -> None:
    command = readme_command(free_port())
    assert command[command.index("--workers") + 1] == "4"  # the case that printed the line four times
    done = subprocess.run(command, cwd=ROOT, env=server_env(tmp_path, DEBUG="maybe"), capture_output=True, text=True,
                          timeout=60)
    line = "FaithLab configuration error: DEBUG='maybe' is not a boolean; use true or false"
    assert done.returncode == 4, done.stderr  # gunicorn's "App failed to load", as config/wsgi.py exits
    assert done.stderr.splitlines().count(line) == 1, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "Booting worker" not in done.stderr  # stopped in the master, before any worker


def test_the_readme_gunicorn_serves_with_good_settings(tmp_path: Path) -> None:
    port = free_port()
    server = subprocess.Popen(readme_command(port), cwd=ROOT, env=server_env(tmp_path), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not answers(f"http://127.0.0.1:{port}/accounts/login/"):
            assert server.poll() is None, "gunicorn exited"
            assert time.monotonic() < deadline, "gunicorn did not answer"
            time.sleep(0.5)
    finally:
        server.terminate()
        server.wait(timeout=60)


def named_unix_sockets(pid: int) -> list[str]:
    """The paths of the Unix sockets the process holds open (a listening control socket would be one)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    paths = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes:
            paths.append(fields[7])
    return paths


def test_two_readme_gunicorns_on_one_machine_share_no_control_socket(tmp_path: Path) -> None:
    """gunicorn's control socket (for its gunicornc tool) defaulted to one path per user, ~/.gunicorn/gunicorn.ctl or
    $XDG_RUNTIME_DIR/gunicorn.ctl: a second server deleted the first one's socket and took the path. The project's
    config turns it off; two servers of one user, each on its own port and data folder, both serve."""
    home, runtime = tmp_path / "home", tmp_path / "run"
    home.mkdir()
    runtime.mkdir(mode=0o700)
    servers = []
    try:
        for name in ("first", "second"):
            data = tmp_path / name
            data.mkdir()
            port = free_port()
            command = readme_command(port)
            command[command.index("--workers") + 1] = "1"
            env = server_env(data, HOME=str(home), XDG_RUNTIME_DIR=str(runtime))
            log = data / "gunicorn.log"
            with log.open("wb") as out:
                servers.append((subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT),
                                port, log))
        for server, port, log in servers:
            deadline = time.monotonic() + 120
            while not answers(f"http://127.0.0.1:{port}/accounts/login/"):
                assert server.poll() is None, f"gunicorn exited:\n{log.read_text()}"
                assert time.monotonic() < deadline, f"gunicorn did not answer:\n{log.read_text()}"
                time.sleep(0.5)
        time.sleep(1)  # gunicorn opened its control socket just after it forked the workers, from a thread
        for server, port, log in servers:
            assert answers(f"http://127.0.0.1:{port}/accounts/login/")
            assert named_unix_sockets(server.pid) == [], log.read_text()
            assert "Control socket" not in log.read_text()
        assert [path for path in tmp_path.rglob("*") if path.is_socket()] == []
    finally:
        for server, _, _ in servers:
            server.terminate()
            server.wait(timeout=60)
