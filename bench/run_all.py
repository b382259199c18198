"""Run every benchmark in bench/ one after another and say how each ended.

    .venv/bin/python bench/run_all.py [--quick] [--only NAME ...] [--skip NAME ...]

Each ``bench/bench_*.py`` runs as its own process (they must not overlap: the
machine has few cores). ``bench_span_save`` needs PostgreSQL: when
DATABASE_URL is not a PostgreSQL URL it is started through
``scripts/with-postgres.sh``, which provides a throwaway server. ``--quick``
passes shorter settings to the benchmarks that take them (a smoke run; the
figures in docs/performance.md come from full runs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))

from _common import is_postgres  # noqa: E402

QUICK = {
    "bench_highlight": ["--requests", "200", "--warmup", "10"],
    "bench_span_save": ["--seconds", "10", "--baseline-seconds", "5", "--warmup-seconds", "2"],
    "bench_import": ["--torch-threads", "1"],
    "bench_import_lock": ["--samples", "10000"],
    "bench_agreement": ["--samples", "10000", "--repeats", "3"],
    "bench_gunicorn_memory": ["--repeats", "1", "--requests", "50"],
    "bench_worker_memory": ["--concurrency", "2", "--repeats", "1"],
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, for a smoke test")
    parser.add_argument("--only", nargs="*", default=[], help="benchmark names to run (e.g. bench_import)")
    parser.add_argument("--skip", nargs="*", default=[], help="benchmark names to leave out")
    options = parser.parse_args()

    scripts = sorted(path for path in BENCH.glob("bench_*.py"))
    if options.only:
        scripts = [path for path in scripts if path.stem in options.only]
    scripts = [path for path in scripts if path.stem not in options.skip]
    outcomes: list[tuple[str, int, float]] = []
    for script in scripts:
        command = [sys.executable, str(script), *(QUICK.get(script.stem, []) if options.quick else [])]
        if script.stem == "bench_span_save" and not is_postgres(os.environ.get("DATABASE_URL")):
            command = [str(ROOT / "scripts" / "with-postgres.sh"), *command]
        print(f"\n=== {script.stem}: {' '.join(command)}", flush=True)
        began = time.perf_counter()
        code = subprocess.call(command, cwd=ROOT)
        outcomes.append((script.stem, code, time.perf_counter() - began))

    print("\n=== summary")
    for name, code, seconds in outcomes:
        print(f"{name:<20} {'ok' if code == 0 else f'exit {code}':<8} {seconds:7.1f} s")
    return 0 if all(code == 0 for _, code, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
