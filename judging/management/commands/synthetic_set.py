"""Make a synthetic hallucination set in the foreground: written by a project's rubric judge, or imported.

While a judge writes it, Ctrl-C cancels the set as its page's Cancel does (no new call is sent; the answers of the
calls in flight are waited for and stored), prints one line and exits with 130; a second Ctrl-C leaves at once
(annotate.services.interrupt). Ctrl-C during an import (one transaction) imports nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project
from annotate.models import Project
from annotate.services import interrupt
from annotate.services.interrupt import EXIT_INTERRUPTED, cancel_on_ctrl_c, stop_at_once
from annotate.services.jobs import CancelRefused
from judging.clients.chat.allowed import operator_command
from judging.models import Judge, SyntheticSet
from judging.services.synthetic import (
    SyntheticSetError,
    create_synthetic_set,
    execute_new_set,
    import_rewrites,
    synthetic_summary,
)
from judging.services.synthetic.cancel import cancel_synthetic_set_from_command
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
        with operator_command():  # whoever runs a command may name any API-key variable
            self._handle(**options)

    def _handle(self, **options: Any) -> None:
        project = get_project(options["project"])
        seed = whole_number(options["seed"], "--seed")
        per_output = whole_number(options["sentences_per_output"], "--sentences-per-output")
        if options["import_file"]:
            try:
                synthetic_set = self._import(project, options, seed, per_output)
            except KeyboardInterrupt:  # the import is one transaction: rolled back
                self.stderr.write("Interrupted (Ctrl-C): nothing was imported.")
                raise SystemExit(EXIT_INTERRUPTED) from None
        else:
            # From here on, Ctrl-C cancels the set written here instead of leaving it "running" (interrupt module).
            self.started: list[SyntheticSet] = []
            with cancel_on_ctrl_c("synthetic_set"):
                try:
                    synthetic_set = self._write(project, options, seed, per_output)
                except KeyboardInterrupt:  # the second Ctrl-C
                    stop_at_once(self._cancel_at_once())
        self._say(synthetic_set, options)

    def _import(self, project: Project, options: dict[str, Any], seed: int, per_output: int) -> SyntheticSet:
        path = Path(options["import_file"])
        try:
            content = path.read_bytes()
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error.strerror}") from error
        try:
            return import_rewrites(project, options["name"], content, path.name, seed=seed,
                                   sentences_per_output=per_output)
        except SyntheticSetError as error:
            raise CommandError(str(error)) from error

    def _cancel_at_once(self) -> str:
        """After a second Ctrl-C: cancel the set started here if the first was not noticed yet; what becomes of it."""
        if not self.started:
            return "Stopped (Ctrl-C twice); no set had started."
        synthetic_set = self.started[0]
        try:
            try:
                cancel_synthetic_set_from_command(synthetic_set, "synthetic_set")
            except CancelRefused:
                pass  # cancelled by the first Ctrl-C already, or ended
            synthetic_set.refresh_from_db()
        except Exception:  # noqa: BLE001 - leaving now matters more; a worker's restart would resume it
            return (f"Stopped (Ctrl-C twice); set {synthetic_set.pk} could not be marked cancelled: cancel it on its "
                    "page, or a worker's start resumes it.")
        return (f"Stopped (Ctrl-C twice) without waiting for the calls in flight: their answers are not stored; set "
                f"{synthetic_set.pk} is {synthetic_set.status_label.lower()}, {synthetic_set.rewrites.count()} of "
                f"{synthetic_set.total} rewrites stored (kept).")

    def _write(self, project: Project, options: dict[str, Any], seed: int, per_output: int) -> SyntheticSet:
        writer = Judge.objects.filter(project=project, name=options["writer_judge"]).first()
        if writer is None:
            known = ", ".join(Judge.objects.filter(project=project, kind=Judge.Kind.RUBRIC)
                              .values_list("name", flat=True)) or "none"
            raise CommandError(f"no judge named {options['writer_judge']!r} in project {project.slug!r} "
                               f"(rubric judges: {known})")

        def start() -> SyntheticSet:
            synthetic_set = create_synthetic_set(project, name=options["name"], writer=writer, seed=seed,
                                                 queue=False, sentences_per_output=per_output)
            self.started.append(synthetic_set)
            return synthetic_set

        if interrupt.requested():
            self.stderr.write("Interrupted (Ctrl-C) before the set started: nothing was written.")
            raise SystemExit(EXIT_INTERRUPTED)
        try:
            # Written here, its lock held from before the set is committed: a worker starting meanwhile leaves it
            # alone.
            synthetic_set = execute_new_set(start)
        except SyntheticSetError as error:
            raise CommandError(str(error)) from error
        if synthetic_set.cancelled and interrupt.requested():
            left = max(0, synthetic_set.total - synthetic_set.done)
            self.stderr.write(
                f"Set {synthetic_set.pk} cancelled (Ctrl-C): {synthetic_set.done} of {synthetic_set.total} rewrites "
                f"stored (the answers of the calls in flight included), {left} not asked. They are kept: Resume on "
                "the set's page asks only for the rest.")
            raise SystemExit(EXIT_INTERRUPTED)
        return synthetic_set

    def _say(self, synthetic_set: SyntheticSet, options: dict[str, Any]) -> None:
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
