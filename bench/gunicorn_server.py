"""gunicorn as a child process for the benchmarks: started on a free loopback port, stopped with SIGTERM."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """gunicorn serving config.wsgi on a free loopback port."""

    def __init__(self, workers: int, threads: int, log_dir: Path) -> None:
        self.workers, self.threads = workers, threads
        self.port = free_port()
        self.log = log_dir / f"gunicorn-{workers}x{threads}.log"
        gunicorn = Path(sys.executable).with_name("gunicorn")
        self.command = [
            str(gunicorn), "config.wsgi", "--bind", f"127.0.0.1:{self.port}",
            "--workers", str(workers), "--threads", str(threads), "--worker-class", "gthread",
            "--keep-alive", "5", "--timeout", "60", "--log-level", "warning",
        ]
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, token: str) -> None:
        # No model warm-up thread in the workers: span saves never embed, and the load would skew the figures.
        environment = dict(os.environ, DEBUG="false", ALLOWED_HOSTS="127.0.0.1", EMBEDDING_WARMUP="false")
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(self.command, env=environment, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"bench: gunicorn exited with {self.process.returncode}:\n{self.tail()}")
            try:
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                connection.request("GET", "/api/projects/", headers={"Authorization": f"Token {token}"})
                status = connection.getresponse().status
                connection.close()
                if status == 200:
                    return
                raise SystemExit(f"bench: gunicorn answered {status} to GET /api/projects/:\n{self.tail()}")
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"bench: gunicorn did not answer within 90 s:\n{self.tail()}")

    def tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-30:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
