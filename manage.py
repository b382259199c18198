#!/usr/bin/env python
from __future__ import annotations

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
    ours = any((Path(__file__).parent / app / "management" / "commands" / f"{command}.py").is_file()
               for app in ("annotate", "judging")) if command.isidentifier() else False
    try:
        yield
    except KeyboardInterrupt:
        if not ours:
            raise
        print(f"manage.py {command}: interrupted (Ctrl-C)", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_INTERRUPTED) from None


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.core.management import execute_from_command_line

    from config.env import setting_errors_as_one_line

    with setting_errors_as_one_line(), interrupted_as_one_line(sys.argv):
        execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
