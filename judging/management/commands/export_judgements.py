"""manage.py export_judgements --project SLUG --what judgements|audits --format jsonl|csv --out PATH [--run ID]
[--bom] (csv only: the UTF-8 byte order mark, for Excel)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.models import Project
from annotate.services.export import bom_refusal
from judging.models import JudgeRun
from judging.services.export import FORMATS, WHAT, synthetic_run_refusal, write_export


class Command(BaseCommand):
    help = "Export a span project's judgements (every run, or one with --run) or its answered audits as JSONL or CSV."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="slug of a span project")
        parser.add_argument("--what", choices=WHAT, default="judgements")
        parser.add_argument("--format", choices=FORMATS, default="jsonl")
        parser.add_argument("--out", required=True, type=Path, help="file to write (replaced if it exists)")
        parser.add_argument("--run", type=int, help="only this judge run's judgements")
        parser.add_argument("--bom", action="store_true",
                            help="csv only: start the file with the UTF-8 byte order mark, so Excel reads it as UTF-8")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"], kind=Project.Kind.SPANS).first()
        if project is None:
            raise CommandError(f"--project: no span project {options['project']!r}")
        if options["bom"] and (refusal := bom_refusal(options["format"])) is not None:
            raise CommandError(f"--bom: {refusal}")
        run = None
        if options["run"] is not None:
            if options["what"] != "judgements":
                raise CommandError("--run: a run narrows judgements, not audits")
            run = JudgeRun.objects.filter(project=project, pk=options["run"]).first()
            if run is None:
                raise CommandError(f"--run: no judge run {options['run']} in project {project.slug!r}")
            if (refusal := synthetic_run_refusal(run)) is not None:
                raise CommandError(f"--run: {refusal}")
        if options["out"].is_dir():
            raise CommandError(f"--out: {options['out']} is a directory; give a file name")
        rows = write_export(project, options["out"], what=options["what"], format=options["format"], run=run,
                            bom=options["bom"])
        self.stdout.write(f"wrote {rows} {options['what']} to {options['out']}")
