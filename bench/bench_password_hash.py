"""Login cost: checking one password with each hasher config/settings.py lists first, in the same process.

A login's server time is dominated by the password check. Prints the median and the spread of ``verify`` for
Argon2 (what new passwords use) and for PBKDF2 at Django's default iterations (what they used before), and the
ratio of the medians.

    .venv/bin/python bench/bench_password_hash.py [--repeats 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def time_verify(hasher: object, repeats: int) -> list[float]:
    """Milliseconds of ``verify`` for one stored password, ``repeats`` times after one warm-up."""
    encoded = hasher.encode("a-long-passphrase-for-timing", hasher.salt())
    hasher.verify("a-long-passphrase-for-timing", encoded)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        assert hasher.verify("a-long-passphrase-for-timing", encoded)
        times.append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.setdefault("FAITHLAB_DATA_DIR", tempfile.mkdtemp(prefix="faithlab-bench-hash-"))
    import django

    django.setup()
    from django.contrib.auth.hashers import Argon2PasswordHasher, PBKDF2PasswordHasher, get_hasher

    print(f"hasher for new passwords: {get_hasher().algorithm}; cpus: {os.cpu_count()}")
    medians = {}
    # Interleaved rounds, so that load from other processes falls on both alike.
    rounds: dict[str, list[float]] = {"argon2": [], "pbkdf2_sha256": []}
    for _ in range(3):
        rounds["argon2"] += time_verify(Argon2PasswordHasher(), max(1, args.repeats // 3))
        rounds["pbkdf2_sha256"] += time_verify(PBKDF2PasswordHasher(), max(1, args.repeats // 3))
    for name, times in rounds.items():
        medians[name] = statistics.median(times)
        print(f"{name:14} verify median {medians[name]:7.1f} ms  min {min(times):7.1f}  max {max(times):7.1f}"
              f"  (n={len(times)})")
    print(f"PBKDF2 / Argon2 median ratio: {medians['pbkdf2_sha256'] / medians['argon2']:.2f}x")


if __name__ == "__main__":
    main()
