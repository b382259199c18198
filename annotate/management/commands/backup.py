"""manage.py backup [--to DIR]

A consistent copy of the embedded SQLite database while web and worker run, through SQLite's online backup: the
file it reads is the one the app uses (settings, not a path typed by hand), so a backup can neither miss the
database nor copy an empty one. On PostgreSQL it says to use pg_dump (README, Backups).
"""

from __future__ import annotations

import shutil
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

PAGES_A_STEP = 4096  # database pages (4 KiB each by default) copied between two looks for a Ctrl-C


# SQLite's extended codes for a failed write or sync: the source is opened read-only, so they are the copy's.
WRITING_ERRORS = frozenset({"SQLITE_FULL", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_FSYNC", "SQLITE_IOERR_TRUNCATE",
                            "SQLITE_IOERR_DIR_FSYNC", "SQLITE_READONLY"})


def _writing_failed(error: sqlite3.Error, source: Path, folder: Path) -> bool:
    """Whether ``error`` came from writing the copy in ``folder``, not from reading ``source``: SQLite's code says a
    write failed (the source is only read), or ``folder`` has less room left than the source needs (a full disk
    whose error SQLite words as "database or disk is full" without naming which database)."""
    if getattr(error, "sqlite_errorname", None) in WRITING_ERRORS:
        return True
    try:
        return shutil.disk_usage(folder).free < source.stat().st_size
    except OSError:
        return False


class Command(BaseCommand):
    help = (
        "Copy the embedded SQLite database, consistently while the app runs, to DIR/faithlab-<date>T<time>.sqlite3 "
        "(DIR is made if missing; default: backups/ in the current folder). On PostgreSQL use pg_dump instead."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--to", default="backups", help="folder for the copy (default: backups)")

    def handle(self, *args: Any, **options: Any) -> None:
        database = settings.DATABASES["default"]
        if database["ENGINE"] != "django.db.backends.sqlite3":
            raise CommandError("the database is PostgreSQL: back it up with pg_dump (README, Backups); this command "
                               "copies the embedded SQLite database only")
        source = Path(database["NAME"])
        if not source.is_file():
            raise CommandError(f"no database at {source}: is FAITHLAB_DATA_DIR (or DATABASE_URL) the one the app "
                               "uses? Nothing was copied")
        folder = Path(options["to"])
        if folder.suffix in {".sqlite3", ".sqlite", ".db"} and not folder.is_dir():
            raise CommandError(f"--to {folder}: give a folder, not a file name; the copy is named "
                               "faithlab-<date>T<time>.sqlite3 inside it. Nothing was copied")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CommandError(f"--to {folder}: cannot make the folder ({exc.strerror})") from exc
        target = folder / f"faithlab-{datetime.now():%Y-%m-%dT%H%M%S}.sqlite3"
        if target.exists():
            raise CommandError(f"{target} exists already; nothing was copied")
        # The source is opened read-only by URI, so a wrong path can never create an empty database.
        reading = sqlite3.connect(f"{source.resolve().as_uri()}?mode=ro", uri=True)
        writing = sqlite3.connect(target)
        try:
            # A step at a time, so that a Ctrl-C is noticed between steps rather than after the whole copy.
            reading.backup(writing, pages=PAGES_A_STEP)
            tables = writing.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0]
            migrations = writing.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
        except sqlite3.Error as exc:
            writing.close()
            target.unlink(missing_ok=True)
            if _writing_failed(exc, source, folder):
                raise CommandError(f"{target}: {exc} (writing the copy in {folder}); nothing was copied, and the "
                                   f"database {source} is as it was") from exc
            raise CommandError(f"{source}: {exc}; nothing was copied") from exc
        except KeyboardInterrupt:
            # A half-written copy looks like a backup: it goes, and the command says so in one line.
            writing.close()
            target.unlink(missing_ok=True)
            raise CommandError("interrupted (Ctrl-C): nothing was copied", returncode=130) from None
        finally:
            reading.close()
            writing.close()
        self.stdout.write(f"copied {source} to {target} ({tables} tables, {migrations} migrations applied)")
