"""manage.py import_faithbench FILE... --project SLUG: one batch per file, all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.template.defaultfilters import pluralize

from annotate.services import ingest, projects


class Command(BaseCommand):
    help = ("Import FaithBench batch files (.json) or unannotated samples (.jsonl), or zip archives of them (a "
            "FaithBench export's download), into a project.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--project", required=True, help="project slug; created if missing")
        parser.add_argument("--round", type=int, default=1, help="round the annotations belong to (default 1)")
        parser.add_argument(
            "--roster", default=None,
            help="comma-separated annotator names who annotated every batch (default: everyone with a span)",
        )
        parser.add_argument(
            "--annotators", choices=ingest.ANNOTATOR_MATCHING, default=ingest.BY_NAME,
            help="by-name (default): one annotator per annotator_name; by-id: one per annotator_name and "
            "annotator_id, named e.g. 'New User (a3ac)', for different people who share a name",
        )
        parser.add_argument(
            "--allow-repeats", action="store_true",
            help="import samples the project already holds, or that the files give twice (the same source, summary "
            "and generator), as new copies; without it they are refused and nothing is imported",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        files = []
        for path in options["files"]:
            if path.is_dir():
                raise CommandError(f"{path}: is a directory; name the files in it (e.g. {path / '*.json'})")
            if not path.is_file():
                raise CommandError(f"{path}: no such file")
            files.append((str(path), path.read_bytes()))
        if options["round"] < 1:
            raise CommandError("--round must be 1 or more")
        roster = [n.strip() for n in options["roster"].split(",") if n.strip()] if options["roster"] else None
        try:
            with transaction.atomic():
                project = projects.get_or_create_project(options["project"])
                report = ingest.import_files(
                    project, files, round=options["round"], roster=roster, annotators=options["annotators"],
                    allow_repeats=options["allow_repeats"],
                )
        except (ingest.ImportFailed, projects.ProjectError) as error:
            hint = ""
            if isinstance(error, ingest.ImportProblems) and error.repeats:
                hint = "\nTo import these samples again as new copies on purpose, add --allow-repeats."
            raise CommandError(f"nothing was imported: {error}{hint}") from None
        self.stdout.write(
            f"imported {', '.join(report.counts())}, {len(report.annotators)} "
            f"annotator{pluralize(len(report.annotators))} ({report.matching}) into {project.slug!r}; "
            f"embedding job {report.job.pk if report.job else '-'} queued"
        )
        for conflict in report.conflicts:
            # The same project refuses these batches a second time, so the advice names a new one.
            hint = (
                " If they are different people, import again with --annotators by-id. Import into a new project"
                f" (--project NEW-SLUG): {project.slug!r} now holds these batches, and a project takes each batch"
                " name once." if conflict.merged else ""
            )
            self.stdout.write(self.style.WARNING(f"warning: {conflict.describe()}{hint}"))
        for line in [*report.describe_unread_annotations(), *report.describe_unknown_fields(), *report.describe_renamed(),
                     *report.describe_case_merges()]:
            self.stdout.write(self.style.WARNING(f"warning: {line}"))
