"""`make run`'s Ctrl-C: seconds from one SIGINT to the script's exit, with the worker and web server started and idle.

Starts scripts/run-dev.sh on an empty SQLite database of its own and a free port, waits until the worker says it is
ready and the login page answers, sends SIGINT to its process group (what a terminal's Ctrl-C does), and times the
exit; ``--repeats`` times. Prints each stop, the median, and what the script printed after the signal on the last
run. ``--baseline PATH`` (a clone at an older commit) is timed in turn with this checkout, run for run, and the ratio
of the medians printed.

    .venv/bin/python bench/bench_dev_stop.py [--repeats 5] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.loopback import answers, free_port  # noqa: E402 (after the path)


def default_sigint() -> None:
    """SIGINT at its default in the script, as in a terminal, even when this benchmark was started with it ignored
    (an older script, the baseline, cannot undo that itself)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_stop(root: Path) -> tuple[float, list[str]]:
    """Seconds from the SIGINT to the script's exit, and the lines it printed after the signal."""
    folder = tempfile.mkdtemp(prefix="faithlab-bench-stop-")
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CELERY_", "DJANGO_"))}
    env.update(FAITHLAB_DATA_DIR=folder, DATABASE_URL=f"sqlite:///{folder}/dev.sqlite3", PORT=str(free_port()),
               HOST="127.0.0.1", VENV=str(Path(sys.executable).parent.parent), PYTHONUNBUFFERED="1")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=root, env=env, check=True)
    process = subprocess.Popen([str(root / "scripts" / "run-dev.sh")], cwd=root, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, start_new_session=True,
                               preexec_fn=default_sigint)  # noqa: PLW1509 (nothing else runs in the child)
    lines: list[tuple[float, str]] = []
    reader = threading.Thread(target=lambda: lines.extend((time.monotonic(), line) for line in process.stdout),
                              daemon=True)
    reader.start()
    url = f"http://127.0.0.1:{env['PORT']}/accounts/login/"
    deadline = time.monotonic() + 180
    while not (answers(url) and any(" ready." in line for _, line in lines)):
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise SystemExit("the servers did not start:\n" + "".join(line for _, line in lines))
        time.sleep(0.3)
    time.sleep(1.0)
    sent = time.monotonic()
    os.killpg(process.pid, signal.SIGINT)
    process.wait(timeout=60)
    seconds = time.monotonic() - sent
    reader.join(timeout=5)
    return seconds, [f"+{at - sent:.2f} s  {line.rstrip()}" for at, line in lines if at >= sent and line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None)
    args = parser.parse_args()
    roots = {"now": ROOT}
    if args.baseline is not None:
        roots = {"baseline": args.baseline.resolve(), **roots}
    stops: dict[str, list[float]] = {name: [] for name in roots}
    printed: dict[str, list[str]] = {}
    for _ in range(args.repeats):
        for name, root in roots.items():
            seconds, printed[name] = one_stop(root)
            stops[name].append(seconds)
    for name, root in roots.items():
        print(f"{name} ({root}): stops " + " ".join(f"{seconds:.2f}" for seconds in stops[name])
              + f" s; median {statistics.median(stops[name]):.2f} s")
        print("  printed after the signal (last run):", *printed[name], sep="\n    ")
    if args.baseline is not None:
        print(f"ratio baseline / now: {statistics.median(stops['baseline']) / statistics.median(stops['now']):.2f}x")
    print(f"{args.repeats} runs each, in turn; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
