"""manage.py import_pairs FILE... --project SLUG [--format pairs|hades|raw]: all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.services.pairs.ingest import FORMATS, PairImportFailed, import_pairs


class Command(BaseCommand):
    help = (
        "Import pair files into a pairs project (created if missing): FaithLab's pair format (default), "
        "HaDes release files (hades) or raw texts to perturb (raw, {id, text} a line)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--project", required=True, help="project slug; a pairs project is created if missing")
        parser.add_argument("--format", choices=FORMATS, default="pairs", help="pairs (default), hades or raw")

    def handle(self, *args: Any, **options: Any) -> None:
        files = []
        for path in options["files"]:
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            files.append((str(path), path.read_bytes()))
        try:
            report = import_pairs(options["project"], files, options["format"])
        except PairImportFailed as error:
            raise CommandError(f"nothing was imported: {error}") from None
        self.stdout.write(report.describe())
