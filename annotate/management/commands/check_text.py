"""Find (and with --fix repair) stored text holding NUL or a lone surrogate, left by installs from before the check.

Exit status 0 when the database is clean (or was fully repaired), 1 when something is found (or was left), so an
upgrade script can run it after `migrate`. The work is annotate.services.stored_text's.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.services.stored_text import CHUNK_SIZE, TextReport, check_stored_text, repair_stored_text


def positive_chunk(text: str) -> int:
    """--chunk-size as a number of rows, at least 1."""
    try:
        size = int(text)
    except ValueError:
        size = 0
    if size < 1:
        raise CommandError(f"--chunk-size must be a whole number of rows, at least 1 (got {text!r})")
    return size


class Command(BaseCommand):
    help = (
        "Report every row of FaithLab's models whose text or JSON (values and object keys) holds a NUL character "
        "or a lone surrogate, which installs from before the import check could store on SQLite and which break "
        "the exports, the sample API and the results page. Exit status 1 when any is found, 0 when clean. "
        "With --fix, replace each with U+FFFD, one code point for one, so stored code-point offsets (spans, "
        "sentences, pair items) stay valid; all in one transaction; a row where a repaired JSON key would take "
        "another key's name is left unchanged and reported (exit status 1). Running --fix again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--fix", action="store_true",
                            help="replace each NUL and lone surrogate with U+FFFD (one code point for one: "
                                 "stored offsets stay valid) and print what changed")
        parser.add_argument("--chunk-size", default=str(CHUNK_SIZE),
                            help=f"rows read at a time (default {CHUNK_SIZE})")

    def handle(self, *args: Any, **options: Any) -> None:
        chunk_size = positive_chunk(options["chunk_size"])
        fixing = options["fix"]
        report = (repair_stored_text if fixing else check_stored_text)(chunk_size=chunk_size)
        for found in report.found:
            self.stdout.write(f"fixed {found.describe()} -> U+FFFD" if fixing else found.describe())
        for reason in report.left:
            self.stdout.write(f"{'left' if fixing else 'cannot fix'} {reason}")
        self.stdout.write(self.summary(report, fixing=fixing))
        if report.left:
            raise CommandError(f"{len(report.left)} problem(s) that --fix cannot repair; see the lines above",
                               returncode=1)
        if report.found and not fixing:
            raise CommandError("text the database cannot store was found; run `manage.py check_text --fix` to "
                               "replace it with U+FFFD", returncode=1)

    @staticmethod
    def summary(report: TextReport, *, fixing: bool) -> str:
        read = f"{report.columns} text and JSON columns of {report.models} models, {report.rows} rows"
        if fixing:
            return (f"Replaced {len(report.found)} string(s) in {report.repaired_rows} row(s) with U+FFFD; "
                    f"{report.left_rows} row(s) left unchanged ({read}).")
        if report.clean:
            return f"No NUL or lone surrogate found ({read})."
        rows = len({(found.model, found.pk) for found in report.found})
        return f"Found {len(report.found)} string(s) in {rows} row(s) holding NUL or a lone surrogate ({read})."
