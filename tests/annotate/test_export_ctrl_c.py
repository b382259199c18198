"""Ctrl-C on `manage.py export` mid-file: the export it was writing does not appear (a truncated file would look
like an export), the previous export at that path is kept as it was, and the command ends with one line and exit
status 130, no traceback (manage.py's interrupted_as_one_line; the files are written whole or not at all,
annotate.services.export.whole_files).

The command runs in a subprocess through manage.py's own main(); the export is held after its first line, so that
the Ctrl-C comes while the file is half-written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.judging.test_judge_ctrl_c import ROOT, finished, manage

# `manage.py export ...` through manage.py's main(), the JSONL export held after its first line ("writing" on
# stderr says it is there).
SLOW_EXPORT = f"""
import runpy, sys, time, django
django.setup()
from annotate.services.export import jobs
real = jobs.jsonl_lines
def held(*args, **kwargs):
    for number, line in enumerate(real(*args, **kwargs)):
        yield line
        if number == 0:
            print("writing", file=sys.stderr, flush=True)
            time.sleep(60)
jobs.jsonl_lines = held
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path({str(ROOT / "manage.py")!r}, run_name="__main__")
"""

SETUP = (
    "from annotate.models import Project; from tests.judging.run_factories import add_samples; "
    "add_samples(Project.objects.create(name='Demo', slug='demo'), 20)"
)


def test_ctrl_c_mid_export_keeps_the_previous_file_leaves_no_partial_one_and_exits_130(tmp_path: Path) -> None:
    for args in (("migrate", "-v0"), ("shell", "-c", SETUP)):
        code, out, err = finished(manage(tmp_path, *args))
        assert code == 0, err
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    previous = out_dir / "demo.jsonl"
    previous.write_text("the export of last week\n")
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    env |= {"FAITHLAB_DATA_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings", "PYTHONUNBUFFERED": "1"}

    command = subprocess.Popen(  # noqa: S603
        [sys.executable, "-c", SLOW_EXPORT, "export", "--project", "demo", "--format", "jsonl", "--out",
         str(previous)], cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert command.stderr is not None
    assert command.stderr.readline().strip() == "writing"
    command.send_signal(signal.SIGINT)
    code, out, err = finished(command)

    assert code == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.strip().splitlines() == ["manage.py export: interrupted (Ctrl-C)"]
    assert previous.read_text() == "the export of last week\n"
    assert sorted(path.name for path in out_dir.iterdir()) == ["demo.jsonl"]  # no partial file beside it


def test_an_export_that_ends_replaces_the_previous_file(tmp_path: Path) -> None:
    for args in (("migrate", "-v0"), ("shell", "-c", SETUP)):
        code, out, err = finished(manage(tmp_path, *args))
        assert code == 0, err
    previous = tmp_path / "demo.jsonl"
    previous.write_text("the export of last week\n")

    code, out, err = finished(manage(tmp_path, "export", "--project", "demo", "--format", "jsonl", "--out",
                                     str(previous)))

    assert code == 0, err
    assert len(previous.read_text().splitlines()) == 20
    assert sorted(path.name for path in tmp_path.glob("*demo.jsonl*")) == ["demo.jsonl"]
