"""Make a synthetic hallucination set in the foreground: written by a project's rubric judge, or imported."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project
from judging.models import Judge, SyntheticSet
from judging.services.synthetic import (
    SyntheticSetError,
    create_synthetic_set,
    execute_new_set,
    import_rewrites,
    synthetic_summary,
)
from judging.synthetic import DEFAULT_SENTENCES_PER_OUTPUT


def whole_number(raw: str, option: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise CommandError(f"{option} must be a whole number >= 0, not {raw!r}") from None
    if value < 0:
        raise CommandError(f"{option} must be a whole number >= 0, not {raw!r}")
    return value


class Command(BaseCommand):
    help = ("Build a synthetic hallucination set (intrinsic and extrinsic rewrites, nested 0-100%% items): "
            "rewritten now by a rubric judge's endpoint, or imported from a JSONL file of rewrites.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug (a span project)")
        parser.add_argument("--name", required=True, help="the new set's name")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--writer-judge", help="name of the project's rubric judge whose endpoint rewrites")
        source.add_argument("--import", dest="import_file",
                            help='JSONL of {"sample", "sentence", "type", "rewritten"}, and "batch" where the sample '
                                 'id repeats across batches')
        parser.add_argument("--seed", default="0", help="seed of the replacement orders (default 0)")
        parser.add_argument("--sentences-per-output", default=str(DEFAULT_SENTENCES_PER_OUTPUT),
                            help="use the outputs of exactly this many sentences; the sets go from 0 to 100%% in "
                                 f"steps of one sentence (default {DEFAULT_SENTENCES_PER_OUTPUT}: 20%% steps)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        project = get_project(options["project"])
        seed = whole_number(options["seed"], "--seed")
        per_output = whole_number(options["sentences_per_output"], "--sentences-per-output")
        try:
            if options["import_file"]:
                path = Path(options["import_file"])
                try:
                    content = path.read_bytes()
                except OSError as error:
                    raise CommandError(f"cannot read {path}: {error.strerror}") from error
                synthetic_set = import_rewrites(project, options["name"], content, path.name, seed=seed,
                                                sentences_per_output=per_output)
            else:
                writer = Judge.objects.filter(project=project, name=options["writer_judge"]).first()
                if writer is None:
                    known = ", ".join(Judge.objects.filter(project=project, kind=Judge.Kind.RUBRIC)
                                      .values_list("name", flat=True)) or "none"
                    raise CommandError(f"no judge named {options['writer_judge']!r} in project {project.slug!r} "
                                       f"(rubric judges: {known})")
                # Written here, its lock held from before the set is committed: a worker starting meanwhile
                # leaves it alone.
                synthetic_set = execute_new_set(lambda: create_synthetic_set(
                    project, name=options["name"], writer=writer, seed=seed, queue=False,
                    sentences_per_output=per_output,
                ))
        except SyntheticSetError as error:
            raise CommandError(str(error)) from error
        summary = synthetic_summary(synthetic_set)
        if options["json"]:
            self.stdout.write(json.dumps(summary, ensure_ascii=False))
        else:
            self.stdout.write(self._text(summary))
        if summary["status"] == SyntheticSet.Status.FAILED:
            raise CommandError(f"the set {summary['name']!r} stopped: see its notes")

    def _text(self, summary: dict[str, Any]) -> str:
        lines = [
            f"Synthetic set {summary['name']!r} (id {summary['set']}, seed {summary['seed']}): {summary['status']}",
            f"{summary['outputs']} outputs of {summary['sentences_per_output']} sentences; rewrites: "
            f"{summary['rewrites']['ok']} written, {summary['rewrites']['error']} failed",
            "items: " + ", ".join(f"{count} {kind}" for kind, count in summary["items"].items()),
        ]
        for kind, count in summary["not_built"].items():
            if count:
                lines.append(f"{kind} items not built for {count} outputs (a rewrite failed or is missing)")
        for failure in summary["failed_rewrites"]:
            lines.append(f"  failed: {failure['type']} sentence {failure['sentence']} of {failure['sample']}: "
                         f"{failure['error']}")
        lines.extend(summary["notes"])
        return "\n".join(lines)
