"""Ctrl-C during `manage.py backup` leaves no half-written copy (which would look like a backup) and says so in one
line with exit status 130, no traceback. The copy is slowed down in the command's own process (a page at a time,
a pause between pages), so that the signal lands while it is being written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs the real command, with each backup step one page long and a pause after it; "copying" on stderr says the
# copy has begun.
SLOW_BACKUP = textwrap.dedent("""
    import sqlite3, sys, time
    real_connect = sqlite3.connect

    class Slow:
        def __init__(self, real):
            self.real = real
        def __getattr__(self, name):
            return getattr(self.real, name)
        def backup(self, target, **options):
            def progress(status, remaining, total):
                print("copying", file=sys.stderr, flush=True)
                time.sleep(0.2)
            self.real.backup(target.real, pages=1, progress=progress)

    sqlite3.connect = lambda *args, **kwargs: Slow(real_connect(*args, **kwargs))
    sys.argv = ["manage.py", "backup", "--to", sys.argv[1]]
    sys.path.insert(0, {root!r})
    import runpy
    runpy.run_path({manage!r}, run_name="__main__")
""")


def test_ctrl_c_mid_copy_removes_the_partial_file_and_exits_130_with_one_line(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env |= {"FAITHLAB_DATA_DIR": str(tmp_path / "data"), "DJANGO_SETTINGS_MODULE": "config.settings"}
    migrated = subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env, cwd=ROOT,
                              capture_output=True, text=True, timeout=300)
    assert migrated.returncode == 0, migrated.stderr
    folder = tmp_path / "backups"
    script = SLOW_BACKUP.format(root=str(ROOT), manage=str(ROOT / "manage.py"))

    command = subprocess.Popen([sys.executable, "-c", script, str(folder)], env=env, cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert command.stderr is not None
    first = command.stderr.readline()
    assert first.strip() == "copying", first
    assert list(folder.glob("faithlab-*.sqlite3"))  # the copy is being written
    command.send_signal(signal.SIGINT)
    out, err = command.communicate(timeout=60)

    assert command.returncode == 130, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip() and line.strip() != "copying"]
    assert lines == ["CommandError: interrupted (Ctrl-C): nothing was copied"]
    assert not list(folder.glob("*"))
    assert "copied" not in out
