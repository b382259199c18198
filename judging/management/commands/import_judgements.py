"""manage.py import_judgements FILE... --project SLUG [--flag] [--json]: judge outputs made elsewhere, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judging.services.ingest import JudgementImportFailed, import_judgements


class Command(BaseCommand):
    help = (
        "Import judge outputs (JSONL: sample external id or source and output texts, judge, score 1..5 or p 0..1, "
        "optional reasoning, latency, tokens, cost, status, cached, run) into a span project, one imported judge per "
        "name, one run per judge (and per run the lines name)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--project", required=True, help="slug of an existing span project")
        parser.add_argument(
            "--flag", action="store_true",
            help="after the import, flag each imported run's outputs below the project's thresholds for audit",
        )
        parser.add_argument("--json", action="store_true", help="print the report as one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        files = []
        for path in options["files"]:
            if path.is_dir():
                raise CommandError(f"{path}: is a directory; name the files in it (e.g. {path / '*.jsonl'})")
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            files.append((str(path), path.read_bytes()))
        try:
            report = import_judgements(options["project"], files, flag=options["flag"])
        except JudgementImportFailed as error:
            raise CommandError(f"nothing was imported: {error}") from None
        if options["json"]:
            self.stdout.write(json.dumps(report.as_dict()))
        else:
            self.stdout.write(report.describe())
