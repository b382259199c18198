"""manage.py export --project SLUG --format faithbench|jsonl|csv --out PATH [--round N] [--pseudonyms]"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.models import Project
from annotate.services import export


class Command(BaseCommand):
    help = "Export a project's labeled dataset. For faithbench, --out is a directory that gets one <batch>.json a batch."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--format", required=True, choices=export.FORMATS)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument("--round", type=int, default=1)
        parser.add_argument("--pseudonyms", action="store_true", help="write the project's pseudonyms (Annotator A, B, ...) for names")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project {options['project']!r}")
        settings = export.ExportOptions(format=options["format"], round=options["round"],
                                        pseudonyms=options["pseudonyms"])
        try:
            paths = export.export_to_path(project, options["out"], settings)
        except export.ExportError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"wrote {len(paths)} file(s): {', '.join(str(p) for p in paths)}")
