#!/usr/bin/env python
from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EXIT_INTERRUPTED = 130  # as a shell reports a process ended by SIGINT


@contextmanager
def interrupted_as_one_line(argv: list[str]) -> Iterator[None]:
    """Ctrl-C in one of FaithLab's own commands ends with one line and exit status 130, not a traceback. The
    commands that run a job or a judge run cancel it first and say so themselves (annotate.services.interrupt);
    the others write in one transaction (imports), into whole files (exports, backup) or nothing at all. Django's
    and other apps' commands (runserver, shell, migrate) keep their own behaviour."""
    command = argv[1] if len(argv) > 1 else ""
    try:
        yield
    except KeyboardInterrupt:
        if not _ours(command):
            raise
        print(f"manage.py {command}: interrupted (Ctrl-C)", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None


# Commands whose writes are whole or absent: exports write whole files (annotate.services.export.whole_files, and the
# faithbench folder all at once), import_faithbench imports in one transaction.
NOTHING_HALF_WRITTEN = frozenset({"export", "import_faithbench"})
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


def _where(error: OSError, argv: list[str]) -> str:
    """The path a full-disk error is about: the file it names, else the command's --out or --to, else the disk."""
    if error.filename:
        return str(error.filename)
    for number, argument in enumerate(argv):
        for option in ("--out", "--to"):
            if argument == option and number + 1 < len(argv):
                return argv[number + 1]
            if argument.startswith(option + "="):
                return argument.split("=", 1)[1]
    return "the disk"


@contextmanager
def troubles_as_one_line(argv: list[str]) -> Iterator[None]:
    """A full disk (ENOSPC, EDQUOT) or a database that is full, locked or not reachable ends one of FaithLab's own
    commands with one line and exit status 1, not a traceback: the operator's fix is outside the program. Every
    other error keeps its traceback, and so do Django's and other apps' commands."""
    command = argv[1] if len(argv) > 1 else ""
    try:
        yield
    except OSError as error:
        if not _ours(command) or error.errno not in DISK_FULL_ERRNOS:
            raise
        kept = ": nothing half-written is kept" if command in NOTHING_HALF_WRITTEN else ""
        print(f"manage.py {command}: no space left on {_where(error, argv)}{kept}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None
    except Exception as error:
        from django.db import InterfaceError, OperationalError

        if not _ours(command) or not isinstance(error, (OperationalError, InterfaceError)):
            raise
        from config.database_busy import BUSY, DISK_FULL, database_trouble

        trouble = database_trouble(error)
        if trouble is None:
            raise
        what = {BUSY: "the database is busy (another write holds its lock; try again)",
                DISK_FULL: "the database's disk is full",
                }.get(trouble, "the database is not reachable")
        if command in NOTHING_HALF_WRITTEN:
            what += " (nothing half-written is kept)"
        first = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"manage.py {command}: {what}: {first}", file=sys.stderr, flush=True)
        raise SystemExit(1) from None


def _ours(command: str) -> bool:
    """Whether ``command`` is one of FaithLab's own management commands."""
    return command.isidentifier() and any(
        (Path(__file__).parent / app / "management" / "commands" / f"{command}.py").is_file()
        for app in ("annotate", "judging"))


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.env import setting_errors_as_one_line

    with setting_errors_as_one_line(), interrupted_as_one_line(sys.argv), troubles_as_one_line(sys.argv):
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
