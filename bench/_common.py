"""Shared set-up for the Django benchmarks: a throwaway data folder and database, figures.

Each benchmark calls ``start_django(name)`` before importing any app code. It
points FAITHLAB_DATA_DIR at a new temporary folder, and:

- with no DATABASE_URL, uses a SQLite file inside that folder;
- with a PostgreSQL DATABASE_URL, creates a fresh database on that server
  (``faithlab_bench_<name>_<pid>``) so the benchmark never touches the tables
  of the database it was given;

then runs ``migrate``. ``BenchEnv.close()`` (also registered with atexit)
drops the database and removes the folder.

The HTTP loads (``span_load``, ``pairs_load``) share the client side from
here: token users, one thread per client released together, paced or
back-to-back requests over a keep-alive connection, each timed.
"""

from __future__ import annotations

import atexit
import http.client
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BENCH_SECRET_KEY = "faithlab-benchmark-key-" + "x" * 40  # noqa: S105  (throwaway, local only)

# Fixed vocabulary for generated texts: seeded RNG, so every run sees the same words.
WORDS = (
    "council bridge river engineers cables repairs traffic mayor budget euros harbour eastern lane "
    "station railway tunnel hospital school teachers students museum exhibition festival weather "
    "storm flood farmers harvest prices market company workers factory contract minister election "
    "voters report survey scientists study patients vaccine doctors nurses police court judge lawyer "
    "football season coach players stadium tickets airport flights passengers delays village residents "
    "library books energy solar wind turbines emissions climate water supply pipes road repairs week "
    "month year spring summer autumn winter morning evening announced reported said expected opened "
    "closed raised reduced approved rejected delayed completed started replaced built funded limited "
    "new old large small local regional national public private eastern western northern southern"
).split()


def is_postgres(url: str | None) -> bool:
    return bool(url) and url.split(":", 1)[0] in {"postgres", "postgresql", "pgsql", "postgis"}


@dataclass
class BenchEnv:
    name: str
    data_dir: Path
    database_url: str | None = None  # the throwaway PostgreSQL database, if any
    admin_url: str | None = None  # the database we were given, used to drop ours
    closed: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def vendor(self) -> str:
        return "postgresql" if self.database_url else "sqlite"

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            from django.db import connections

            connections.close_all()
        except Exception as error:  # noqa: BLE001  (clean-up goes on regardless)
            print(f"bench: closing connections failed: {error}", file=sys.stderr)
        if self.database_url and self.admin_url:
            _drop_database(self.admin_url, urlsplit(self.database_url).path.lstrip("/"))
        shutil.rmtree(self.data_dir, ignore_errors=True)


def _create_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


def _drop_database(admin_url: str, name: str) -> None:
    import psycopg

    try:
        with psycopg.connect(admin_url, autocommit=True) as connection:
            try:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            except psycopg.errors.SyntaxError:  # PostgreSQL < 13
                connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
    except Exception as error:  # noqa: BLE001
        print(f"bench: could not drop database {name}: {error}", file=sys.stderr)


def start_django(name: str, *, production_like: bool = True) -> BenchEnv:
    """Set the environment, create a throwaway database, run ``migrate``; return the handle."""
    sys.path.insert(0, str(ROOT))
    os.chdir(ROOT)
    data_dir = Path(tempfile.mkdtemp(prefix=f"faithlab-bench-{name}-"))
    os.environ["FAITHLAB_DATA_DIR"] = str(data_dir)
    os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
    if production_like:
        # Timings as in production: no query log, no debug pages.
        os.environ.setdefault("DEBUG", "false")
        os.environ.setdefault("SECRET_KEY", BENCH_SECRET_KEY)
        os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver")
    os.environ.setdefault("LOG_LEVEL", "ERROR")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    env = BenchEnv(name=name, data_dir=data_dir)
    atexit.register(env.close)
    url = os.environ.get("DATABASE_URL")
    if url and not is_postgres(url):
        raise SystemExit(f"bench: DATABASE_URL must be PostgreSQL or unset (SQLite), got {url.split(':', 1)[0]}:")
    if is_postgres(url):
        assert url is not None
        db_name = f"faithlab_bench_{name}_{os.getpid()}"
        parts = urlsplit(url)
        env.admin_url = url
        env.database_url = urlunsplit(parts._replace(path="/" + db_name))
        try:
            _create_database(url, db_name)
        except Exception as error:
            raise SystemExit(f"bench: cannot create a throwaway database on {parts.hostname}: {error}") from None
        os.environ["DATABASE_URL"] = env.database_url

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0, interactive=False)
    return env


def database_version() -> str:
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SHOW server_version")
            return "PostgreSQL " + cursor.fetchone()[0]
    import sqlite3

    return "SQLite " + sqlite3.sqlite_version


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    found = f"{os.cpu_count()} CPUs ({model}), Python {platform.python_version()}"
    torch = sys.modules.get("torch")  # benchmarks that run models say which GPU they ran on
    if torch is not None and torch.cuda.is_available():
        found += f", GPU {torch.cuda.get_device_name(0)} (CUDA {torch.version.cuda})"
    return found


def summary(values_seconds: list[float]) -> dict[str, float]:
    """p50/p95/p99/mean in milliseconds."""
    if not values_seconds:
        return {"n": 0, "p50": float("nan"), "p95": float("nan"), "p99": float("nan"), "mean": float("nan")}
    array = np.asarray(values_seconds) * 1000.0
    p50, p95, p99 = np.percentile(array, [50, 95, 99])
    return {"n": len(values_seconds), "p50": float(p50), "p95": float(p95), "p99": float(p99),
            "mean": float(array.mean())}


def sentence(rng: random.Random, low: int = 8, high: int = 18) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def yes_no(met: bool) -> str:
    return "MET" if met else "NOT MET"


def _machine_busy_jiffies() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields[:8]) - idle, sum(fields[:8])


def _tree_jiffies(roots: list[int]) -> int:
    """CPU of the given processes and all their descendants, including reaped children."""
    parents: dict[int, int] = {}
    used: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw.rsplit(")", 1)[1].split()
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    ours = set(roots)
    grew = True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in ours and pid not in ours:
                ours.add(pid)
                grew = True
    return sum(used.get(pid, 0) for pid in ours)


class CpuMonitor:
    """How busy the machine was during a measurement, and how much of that was not us.

    Other engineers' tests run on the same cores; the machine's busy time minus
    the CPU of this benchmark's process tree (plus ``extra_roots``, e.g. the
    PostgreSQL server) is their load. A large value means noisy figures.
    """

    def __init__(self, extra_roots: list[int] | None = None, parts: dict[str, list[int]] | None = None) -> None:
        self.roots = [os.getpid(), *(extra_roots or [])]
        self.parts = parts or {}  # name -> process roots, each counted with its descendants
        self.ticks = os.sysconf("SC_CLK_TCK")
        self.started = 0.0
        self.busy = self.own = 0
        self.part_start: dict[str, int] = {}
        self.part_seconds: dict[str, float] = {}

    def __enter__(self) -> CpuMonitor:
        self.started = time.perf_counter()
        self.busy, _ = _machine_busy_jiffies()
        self.own = _tree_jiffies(self.roots)
        self.part_start = {name: _tree_jiffies(roots) for name, roots in self.parts.items()}
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started
        busy, _ = _machine_busy_jiffies()
        own = _tree_jiffies(self.roots)
        self.part_seconds = {
            name: (_tree_jiffies(roots) - self.part_start[name]) / self.ticks for name, roots in self.parts.items()
        }
        self.machine_cores = (busy - self.busy) / self.ticks / self.seconds
        self.own_cores = (own - self.own) / self.ticks / self.seconds
        self.other_cores = max(0.0, self.machine_cores - self.own_cores)

    def describe(self) -> str:
        return (f"CPU during the run: machine {self.machine_cores:.2f} of {os.cpu_count()} cores busy, "
                f"this benchmark {self.own_cores:.2f}, other sessions ~{self.other_cores:.2f}; "
                f"load average {Path('/proc/loadavg').read_text().split()[0]}")


# A server's processes and their memory, as the gunicorn and Celery worker memory benchmarks read them.


def memory(pid: int) -> dict[str, int]:
    """RSS, PSS (shared pages split between the processes that map them), private and shared memory of one process,
    in MiB, from /proc/<pid>/smaps_rollup."""
    kib: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, value = line.split()[:2]
        kib[key.rstrip(":")] = int(value)
    return {
        "rss": kib["Rss"] // 1024,
        "pss": kib["Pss"] // 1024,
        "private": (kib["Private_Clean"] + kib["Private_Dirty"]) // 1024,
        "shared": (kib["Shared_Clean"] + kib["Shared_Dirty"]) // 1024,
    }


def children(pid: int) -> list[int]:
    """The children of any of the process's threads, sorted (/proc lists a child under the thread that forked it:
    billiard forks a replacement pool process from its supervisor thread)."""
    return sorted(int(child) for found in Path(f"/proc/{pid}/task").glob("*/children")
                  for child in found.read_text().split())


def median(values: list[float]) -> float:
    """The median, or NaN for no values (a table row with nothing measured)."""
    return statistics.median(values) if values else float("nan")


# The client side of the HTTP loads: what span_load and pairs_load have in common.


@dataclass
class TokenUser:
    """A project member that a load drives through the API, with the token it sends."""

    username: str
    token: str


@dataclass
class ClientOutcome:
    """What one client thread sent and how each request went; each load adds what its clients were told."""

    username: str
    records: list[tuple[float, float, str, int]] = field(default_factory=list)  # (sent at, seconds, kind, status)
    failures: list[str] = field(default_factory=list)

    def note_unexpected(self, method: str, path: str, status: int, content: bytes) -> None:
        self.failures.append(f"{method} {path}: {status} {content[:200]!r}")


OutcomeT = TypeVar("OutcomeT", bound=ClientOutcome)


class ApiConnection:
    """One client thread's keep-alive connection to the server on 127.0.0.1, sending the user's token.

    Every request is timed into the outcome's records. A transport failure is
    recorded with status 0 and noted in the failures, and the next request goes
    over a new connection.
    """

    def __init__(self, port: int, token: str, outcome: ClientOutcome) -> None:
        self.port = port
        self.outcome = outcome
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json",
                        "Accept": "application/json"}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(self, kind: str, method: str, path: str, payload: str | None) -> tuple[int, bytes] | None:
        """(status, body) of the answer, or None when the request failed in transport."""
        sent = time.perf_counter()
        try:
            self.connection.request(method, path, payload, self.headers)
            response = self.connection.getresponse()
            content = response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as error:
            self.outcome.records.append((sent, time.perf_counter() - sent, kind, 0))
            self.outcome.failures.append(f"{method} {path}: {type(error).__name__}: {error}")
            self.connection.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            return None
        self.outcome.records.append((sent, time.perf_counter() - sent, kind, status))
        return status, content

    def close(self) -> None:
        self.connection.close()


def paced_turns(rng: random.Random, until: float, pace: float) -> Iterator[None]:
    """Yield once for each request to start before ``until``: back to back (pace 0), or every ``pace`` s on average.

    Paced, requests start on a schedule (intervals uniform in 0.5-1.5 x pace),
    so a slow answer does not lower the offered rate; clients start at random
    offsets, not all at once.
    """
    next_turn = time.perf_counter() + (rng.uniform(0, pace) if pace else 0.0)
    while time.perf_counter() < until:
        if pace:
            wait = next_turn - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if time.perf_counter() >= until:
                return
            next_turn = max(next_turn + pace * rng.uniform(0.5, 1.5), time.perf_counter())
        yield


def run_client_threads(count: int, client_loop: Callable[[int, float, threading.Barrier], OutcomeT],
                       seconds: float, role: str) -> tuple[list[OutcomeT], float, float]:
    """Run ``client_loop(index, until, start_line)`` in one thread per client for ``seconds``.

    The clients wait at ``start_line`` so that they all start with the clock.
    Returns the outcomes and the start/end clock; ``role`` names the clients
    in the error when a thread does not finish.
    """
    results: list[OutcomeT | None] = [None] * count
    start_line = threading.Barrier(count + 1)

    def work(index: int) -> None:
        results[index] = client_loop(index, until, start_line)

    threads = [threading.Thread(target=work, args=(index,), daemon=True) for index in range(count)]
    began = time.perf_counter()
    until = began + seconds
    for thread in threads:
        thread.start()
    start_line.wait()
    for thread in threads:
        thread.join(seconds + 120)
    ended = time.perf_counter()
    if any(result is None for result in results):
        raise SystemExit(f"bench: a {role} thread did not finish")
    return [result for result in results if result is not None], began, ended


def add_token_annotators(prefix: str, count: int, project: Any) -> list[tuple[Any, TokenUser]]:
    """``count`` new annotators of ``project`` named ``<prefix>-00``, ``<prefix>-01``..., each with an API token.

    Returns each one's user row (for what a load adds, such as an assignment) with its token user.
    """
    from django.contrib.auth import get_user_model

    from annotate.models import Membership
    from annotate.services.tokens import create_api_token

    members = []
    for index in range(count):
        user = get_user_model().objects.create_user(username=f"{prefix}-{index:02d}")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        members.append((user, TokenUser(user.username, create_api_token(user, "bench")[1])))
    return members
