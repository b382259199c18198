"""Process start and exit: what every web server, Celery worker and manage.py command pays before its first request
or task and after its last (and so part of `make run`'s Ctrl-C stop).

Each run is a fresh interpreter that sets Django up, loads every URL module (as the first request does) and every
tasks module (as the worker does), then exits; the time is from spawn to exit. The baseline run also imports the
openai SDK at start, as judging.clients did before it imported it at first use. Runs alternate, so both see the same
machine load; prints the median and spread of each and the ratio of the medians.

    .venv/bin/python bench/bench_startup.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
if sys.argv[1] == "eager":
    import openai  # noqa: F401  (what judging.clients imported at start before)
import django
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns
from config.celery import app
app.loader.import_default_modules()
print(len(sys.modules))
"""


def one_run(mode: str, env: dict[str, str]) -> tuple[float, int]:
    """Seconds from spawn to exit of one probe, and the number of modules it had loaded."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", PROBE, mode], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True)
    return time.perf_counter() - start, int(done.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="faithlab-bench-startup-")
    env = {key: value for key, value in os.environ.items() if not key.startswith("DJANGO_")}
    env.update(FAITHLAB_DATA_DIR=folder, DATABASE_URL=f"sqlite:///{folder}/db.sqlite3")
    times: dict[str, list[float]] = {"eager": [], "lazy": []}
    modules: dict[str, int] = {}
    one_run("lazy", env)  # warm the file cache once
    for _ in range(args.repeats):
        for mode in ("eager", "lazy"):
            seconds, modules[mode] = one_run(mode, env)
            times[mode].append(seconds)
    for mode, label in (("eager", "baseline: openai imported at start"), ("lazy", "now: openai at first use")):
        runs = sorted(times[mode])
        print(f"{label:38s} median {statistics.median(runs):.3f} s  (min {runs[0]:.3f}, max {runs[-1]:.3f}) "
              f"modules {modules[mode]}")
    ratio = statistics.median(times["eager"]) / statistics.median(times["lazy"])
    print(f"ratio baseline / now: {ratio:.2f}x over {args.repeats} alternating runs each; "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
