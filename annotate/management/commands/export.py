"""manage.py export --project SLUG --format faithbench|jsonl|csv --out PATH [--round N] [--pseudonyms] [--bom]

For a pairs project: --format pairs|hades --out FILE (one JSONL file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.models import Project
from annotate.services import export
from annotate.services.pairs import export as pair_export


class Command(BaseCommand):
    help = "Export a project's labeled dataset. For faithbench, --out is a directory that gets one <batch>.json a batch."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--format", required=True, choices=export.FORMATS + pair_export.FORMATS)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument("--round", type=int, default=1)
        parser.add_argument("--pseudonyms", action="store_true", help="write the project's pseudonyms (Annotator A, B, ...) for names")
        parser.add_argument("--bom", action="store_true",
                            help="csv only: start the file with the UTF-8 byte order mark, so Excel reads it as UTF-8")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project {options['project']!r}")
        is_pairs = project.kind == Project.Kind.PAIRS
        if is_pairs != (options["format"] in pair_export.FORMATS):
            kind, formats = ("pairs", pair_export.FORMATS) if is_pairs else ("span annotation", export.FORMATS)
            raise CommandError(f"--format: {options['format']} does not apply to {project.slug!r}, a {kind} project; "
                               f"its formats are {', '.join(formats)}")
        if options["bom"] and (refusal := export.bom_refusal(options["format"])) is not None:
            raise CommandError(f"--bom: {refusal}")
        if is_pairs:
            try:
                path = pair_export.write_pairs_export(project, options["format"], options["out"])
            except export.ExportError as error:
                raise CommandError(str(error)) from None
            self.stdout.write(f"wrote 1 file(s): {path}")
            return
        settings = export.ExportOptions(format=options["format"], round=options["round"],
                                        pseudonyms=options["pseudonyms"], bom=options["bom"])
        try:
            paths = export.export_to_path(project, options["out"], settings)
        except export.ExportError as error:
            raise CommandError(str(error)) from None
        self.stdout.write(f"wrote {len(paths)} file(s): {', '.join(str(p) for p in paths)}")
