"""manage.py import_pairs FILE... --project SLUG [--format pairs|hades|raw] [--skip-existing] [--consensus-as-label]:
all or nothing."""

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
        parser.add_argument(
            "--skip-existing", action="store_true",
            help="hades only: leave out rows already in the project (same perturbed text and replaced span) "
                 "and list them, instead of refusing the files",
        )
        parser.add_argument(
            "--consensus-as-label", action="store_true",
            help="pairs only: an exported line's consensus (H or N) becomes its item's label when the line has no "
                 "label of its own, so a judged project moves with its consensus (votes are not imported)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        files = []
        for path in options["files"]:
            if path.is_dir():
                raise CommandError(f"{path}: is a directory; name the files in it (e.g. {path / '*.jsonl'})")
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            files.append((str(path), path.read_bytes()))
        try:
            report = import_pairs(options["project"], files, options["format"], skip_existing=options["skip_existing"],
                                  consensus_as_label=options["consensus_as_label"])
        except PairImportFailed as error:
            hint = ""
            if error.already_imported:
                hint = "\n--skip-existing imports the other rows and leaves out those already imported"
            raise CommandError(f"nothing was imported: {error}{hint}") from None
        self.stdout.write(report.describe())
        for line in report.warnings():
            self.stdout.write(self.style.WARNING(f"warning: {line}"))
