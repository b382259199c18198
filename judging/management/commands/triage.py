"""manage.py triage --project SLUG [--batch NAME] [--json]: first pass, flags and explainer, in the foreground."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project
from annotate.models import Batch, Project
from judging.clients.chat.allowed import operator_command
from judging.management.foreground import PROGRESS_SECONDS, ProgressLines, cancel_at_once, cancelled_line, stop_at_once
from judging.models import JudgeRun
from judging.services.judges import JudgeSettingsError
from judging.services.runs import execute_new_run, interrupt, run_summary
from judging.services.runs.interrupt import EXIT_INTERRUPTED, cancel_on_ctrl_c
from judging.services.triage import start_explanation, start_triage


class Command(BaseCommand):
    help = (
        "Triage a span project (or one batch): its first-pass judge scores every sample, the ones under the "
        "project's thresholds (LLM score <= 3, NLI p < 0.5 by default) go to the audit queue, and its explainer "
        "(a judge with reasoning), if set, judges the ones this first pass flagged. An explainer that could not run "
        "(its API-key variable not set here) refuses the triage before anything runs. Judges and thresholds are set "
        "on the project's judges page. --json prints {first_pass, flagged, explain}."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="slug of a span project")
        parser.add_argument("--batch", default=None, help="only this batch (its name)")
        parser.add_argument("--quiet", action="store_true",
                            help=f"no progress lines on stderr (by default one every {PROGRESS_SECONDS:g} s)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        with operator_command():  # whoever runs a command may name any API-key variable
            self._handle(**options)

    def _handle(self, **options: Any) -> None:
        # Ctrl-C cancels the run executing here (and starts no explainer) instead of leaving it "running".
        self.started: list[JudgeRun] = []
        with cancel_on_ctrl_c("triage"):
            try:
                self._triage(options)
            except KeyboardInterrupt:  # the second Ctrl-C
                stop_at_once(cancel_at_once(self.started, "triage"))

    def _started(self, run: JudgeRun | None) -> JudgeRun | None:
        if run is not None:
            self.started.append(run)
        return run

    def _stop_if_interrupted(self, run: JudgeRun | None, what: str) -> None:
        if not interrupt.requested():
            return
        if run is not None and run.cancelled:
            self.stderr.write(f"{what}: {cancelled_line(run)}")
        elif run is not None:
            self.stderr.write(f"{what}: run {run.pk} is {run.status} (it ended before the Ctrl-C was noticed); "
                              "Ctrl-C: nothing more was started.")
        raise SystemExit(EXIT_INTERRUPTED)

    def _triage(self, options: dict[str, Any]) -> None:
        project = get_project(options["project"])
        if project.kind != Project.Kind.SPANS:
            raise CommandError(f"project {project.slug!r} is a {project.kind} project: triage works on span projects")
        batch = None
        if options["batch"] is not None:
            batch = Batch.objects.filter(project=project, name=options["batch"]).first()
            if batch is None:
                names = ", ".join(project.batches.values_list("name", flat=True)[:20]) or "none"
                raise CommandError(f"--batch: project {project.slug!r} has no batch {options['batch']!r} "
                                   f"(its batches: {names})")
        # Each run is executed here, its lock held from before it is committed: a worker starting meanwhile leaves
        # it alone (judging.services.runs.execute_new_run).
        progress = None if options["quiet"] else ProgressLines(self.stderr)
        try:
            first = execute_new_run(lambda: self._started(start_triage(project, batch=batch, queue=False)),
                                    follow_up=False, progress=progress)
        except JudgeSettingsError as error:
            raise CommandError(f"{error.field}: {error}") from None
        assert first is not None
        self._stop_if_interrupted(first, "first pass")
        if first.status == JudgeRun.Status.FAILED:
            raise CommandError(f"first-pass run {first.pk} failed: {first.error}")
        if first.status != JudgeRun.Status.DONE:  # another process holds its lock (a worker picked it up)
            raise CommandError(f"first-pass run {first.pk} is {first.status}: another process is executing it, so "
                               "no explainer was started here.")
        try:
            explain = execute_new_run(lambda: self._started(start_explanation(first, queue=False)), progress=progress)
        except JudgeSettingsError as error:
            raise CommandError(f"the explainer was not started ({error.field}): {error}") from None
        self._stop_if_interrupted(explain, "explainer")
        result = {
            "first_pass": run_summary(first, with_judgements=False),
            "flagged": first.flagged,
            "explain": None if explain is None else run_summary(explain, with_judgements=False),
        }
        if options["json"]:
            self.stdout.write(json.dumps(result, ensure_ascii=False))
            return
        self.stdout.write(f"first pass: run {first.pk} of {first.judge.name!r}: {first.scored} scored, "
                          f"{first.failed} failed; {first.flagged} flagged for audit")
        if explain is None:
            self.stdout.write("explainer: none run (no explainer set, or nothing flagged)")
        else:
            note = f" ({explain.error})" if explain.error else ""
            self.stdout.write(f"explainer: run {explain.pk} of {explain.judge.name!r}: {explain.status}, "
                              f"{explain.scored} scored, {explain.failed} failed{note}")
