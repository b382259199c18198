"""A full disk or a database that is away: the FaithBench export folder is all or nothing, FaithLab's commands end
with one line (manage.py troubles_as_one_line) and backup names the copy, not the live database, when the copy could
not be written.

The commands run in a subprocess through manage.py's own main(), with the write that fails replaced by a test double
(a python -c wrapper, as tests/annotate/test_export_ctrl_c.py does)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from annotate.models import Project
from annotate.services import export
from annotate.services.export import faithbench
from annotate.services.ingest import import_batches, parse_samples_jsonl
from tests.judging.test_judge_ctrl_c import ROOT, finished, manage

# `manage.py ...` through manage.py's main(), after the code in argv[1] (the test double) has run.
WRAPPED = f"""
import runpy, sys, django
django.setup()
exec(sys.argv.pop(1))
sys.argv = ["manage.py", *sys.argv[1:]]
runpy.run_path({str(ROOT / "manage.py")!r}, run_name="__main__")
"""

SETUP = (
    "from annotate.models import Project; from tests.judging.run_factories import add_samples; "
    "add_samples(Project.objects.create(name='Demo', slug='demo'), 5)"
)


def wrapped(data_dir: Path, double: str, *args: str) -> tuple[int, str, str]:
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    env |= {"FAITHLAB_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "config.settings"}
    command = subprocess.run([sys.executable, "-c", WRAPPED, double, *args], cwd=ROOT, env=env,  # noqa: S603
                             capture_output=True, text=True, timeout=300)
    return command.returncode, command.stdout, command.stderr


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    for args in (("migrate", "-v0"), ("shell", "-c", SETUP)):
        code, out, err = finished(manage(tmp_path, *args))
        assert code == 0, err
    return tmp_path


# 1. The FaithBench folder: all or nothing.

@pytest.mark.django_db
def test_a_faithbench_export_failing_on_the_second_batch_keeps_the_previous_files_and_adds_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = Project.objects.create(name="Two", slug="two")
    for name in ("first", "second"):
        line = json.dumps({"passage_id": name, "source": f"The {name} source.", "summary": "A summary.",
                           "generator": "g"})
        import_batches(project, parse_samples_jsonl(line, f"{name}.jsonl"))
    first, second = (f"{batch.name}.json" for batch in project.batches.order_by("pk"))
    out = tmp_path / "out"
    out.mkdir()
    (out / first).write_text("last week's first\n")
    (out / second).write_text("last week's second\n")
    real = faithbench._faithbench_batch_bytes
    calls = []

    def full_on_the_second(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        pieces = real(*args, **kwargs)
        if len(calls) == 1:
            return pieces

        def failing() -> Any:
            yield next(pieces)
            raise OSError(errno.ENOSPC, "No space left on device")

        return failing()

    monkeypatch.setattr(faithbench, "_faithbench_batch_bytes", full_on_the_second)
    with pytest.raises(OSError, match="No space left"):
        faithbench.write_faithbench(project, out, export.ExportOptions())

    assert len(calls) == 2
    assert sorted(path.name for path in out.iterdir()) == [first, second]  # no temporaries left
    assert (out / first).read_text() == "last week's first\n"
    assert (out / second).read_text() == "last week's second\n"

    monkeypatch.setattr(faithbench, "_faithbench_batch_bytes", real)
    written = faithbench.write_faithbench(project, out, export.ExportOptions())
    assert [path.name for path in written] == [first, second]
    assert all(json.loads(path.read_text())["samples"] for path in written)
    assert sorted(path.name for path in out.iterdir()) == [first, second]


# 2. A full disk or a database error in a command: one line, exit status 1.

EXPORT_FULL = """
import errno
from annotate.services.export import jobs
real = jobs.jsonl_lines
def full(*args, **kwargs):
    for number, line in enumerate(real(*args, **kwargs)):
        yield line
        raise OSError(errno.ENOSPC, "No space left on device")
jobs.jsonl_lines = full
"""


def test_an_export_on_a_full_disk_ends_with_one_line_and_keeps_the_previous_file(demo: Path) -> None:
    previous = demo / "demo.jsonl"
    previous.write_text("the export of last week\n")

    code, out, err = wrapped(demo, EXPORT_FULL, "export", "--project", "demo", "--format", "jsonl", "--out",
                             str(previous))

    assert code == 1, err
    assert err.strip().splitlines() == [f"manage.py export: no space left on {previous}: nothing half-written is kept"]
    assert previous.read_text() == "the export of last week\n"
    assert sorted(path.name for path in demo.glob("*demo.jsonl*")) == ["demo.jsonl"]


IMPORT_FULL = """
from django.db import OperationalError
from annotate.services import ingest
def full(*args, **kwargs):
    raise OperationalError("database or disk is full")
ingest.import_files = full
"""


def test_an_import_whose_database_is_full_ends_with_one_line(demo: Path) -> None:
    samples = demo / "samples.jsonl"
    samples.write_text(json.dumps({"passage_id": "p", "source": "S.", "summary": "A.", "generator": "g"}) + "\n")

    code, out, err = wrapped(demo, IMPORT_FULL, "import_faithbench", str(samples), "--project", "demo")

    assert code == 1, err
    assert err.strip().splitlines() == [
        "manage.py import_faithbench: the database's disk is full (nothing half-written is kept): "
        "database or disk is full"]


@pytest.mark.parametrize(("error", "words"), [
    ('OperationalError("connection failed: connection to server at \\"127.0.0.1\\", port 5432 failed: '
     'Connection refused\\n\\tIs the server running on that host?")',
     "the database is not reachable (nothing half-written is kept): connection failed: connection to server at "
     '"127.0.0.1", port 5432 failed: Connection refused'),
    ('OperationalError("database is locked")',
     "the database is busy (another write holds its lock; try again) (nothing half-written is kept): "
     "database is locked"),
    ('InterfaceError("connection already closed")',
     "the database is not reachable (nothing half-written is kept): connection already closed"),
])
def test_a_database_away_or_locked_ends_an_import_with_one_line(demo: Path, error: str, words: str) -> None:
    samples = demo / "samples.jsonl"
    samples.write_text(json.dumps({"passage_id": "p", "source": "S.", "summary": "A.", "generator": "g"}) + "\n")
    double = IMPORT_FULL.replace('OperationalError("database or disk is full")', error).replace(
        "import OperationalError", "import InterfaceError, OperationalError")

    code, out, err = wrapped(demo, double, "import_faithbench", str(samples), "--project", "demo")

    assert code == 1, err
    assert err.strip().splitlines() == [f"manage.py import_faithbench: {words}"]


@pytest.mark.parametrize("double", [
    IMPORT_FULL.replace('OperationalError("database or disk is full")', 'OperationalError("no such table: x")'),
    EXPORT_FULL.replace("errno.ENOSPC", "errno.EACCES"),
])
def test_other_errors_keep_their_traceback(demo: Path, double: str) -> None:
    samples = demo / "samples.jsonl"
    samples.write_text(json.dumps({"passage_id": "p", "source": "S.", "summary": "A.", "generator": "g"}) + "\n")
    args = (("import_faithbench", str(samples), "--project", "demo") if "ingest" in double
            else ("export", "--project", "demo", "--format", "jsonl", "--out", str(demo / "x.jsonl")))

    code, out, err = wrapped(demo, double, *args)

    assert code == 1, err
    assert "Traceback (most recent call last)" in err
    assert "no space left" not in err and "is not reachable" not in err


# 3. backup on a full --to: the copy is named, not the live database.

# The copy's connection limited to a few pages: SQLite's own "database or disk is full" (SQLITE_FULL) while writing it.
BACKUP_FULL = """
import sqlite3
from annotate.management.commands import backup
real = sqlite3.connect
def small(target, *args, **kwargs):
    connection = real(target, *args, **kwargs)
    if not kwargs.get("uri"):
        connection.execute("PRAGMA max_page_count = 2")
    return connection
backup.sqlite3 = type("sqlite3", (), {"connect": staticmethod(small), "Error": sqlite3.Error})
"""


def test_backup_to_a_full_folder_names_the_copy_not_the_live_database(demo: Path) -> None:
    folder = demo / "backups"

    code, out, err = wrapped(demo, BACKUP_FULL, "backup", "--to", str(folder))

    assert code == 1, err
    [line] = err.strip().splitlines()
    source = demo / "faithlab.sqlite3"
    assert line.startswith(f"CommandError: {folder}/faithlab-"), line
    assert "database or disk is full (writing the copy in " in line
    assert line.endswith(f"nothing was copied, and the database {source} is as it was"), line
    assert not line.startswith(f"CommandError: {source}")
    assert list(folder.iterdir()) == []
