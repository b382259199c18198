"""Balanced accuracy and F1-macro of each detector stored in the samples' metadata, and of each judge.

Prints the results API's object (stats.explained_detector_eval): every detector of the project, one with no
figures in the round (round 2 before anyone submits it, or no output on the judged samples) with n 0 and the reason.
With --json the object's keys are detectors only, so the truth set, threshold and round it was computed with go to
stderr in one line (the API's X-FaithLab-Hallucinated header), leaving stdout the JSON it always was.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project, positive_int
from annotate.results import DEFAULT_TRUTH, TRUTH_SETS, truth_text
from annotate.services.stats import explained_detector_eval


class Command(BaseCommand):
    help = (
        "Evaluate the detectors kept in sample metadata, and the judges, against the worst human label "
        "(hallucinated when it is U or Q by default; see --hallucinated)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument(
            "--threshold",
            default="0.5",
            help="probability of consistency at or above which a prediction counts as consistent (default 0.5)",
        )
        parser.add_argument("--round", default="1", help="annotation round (default 1)")
        parser.add_argument(
            "--hallucinated",
            default=DEFAULT_TRUTH,
            help="the human truth: worst labels that count as hallucinated, U (Unwanted only), UQ (Unwanted or "
            f"Questionable) or UQB (also Benign); default {DEFAULT_TRUTH}",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        threshold = _threshold(options["threshold"])
        round_number = positive_int(options["round"], "--round")
        hallucinated = _hallucinated(options["hallucinated"])
        project = get_project(options["project"])
        try:
            report = explained_detector_eval(project, threshold, round_number, hallucinated)
        except ValueError as error:
            raise CommandError(str(error)) from error
        if options["json"]:
            self.stdout.write(json.dumps(report))
            self.stderr.write(f"detector_eval: project {project.slug}, round {round_number}, threshold {threshold:g}, "
                              f"hallucinated={hallucinated} (hallucinated when the worst label is "
                              f"{truth_text(hallucinated)})", style_func=lambda line: line)  # a note, not an error
            return
        if not report:
            self.stdout.write(f"Project {project.slug}, round {round_number}: no detector outputs in sample metadata")
            return
        width = max(len("detector"), *(len(name) for name in report))
        lines = [
            f"Project {project.slug}, round {round_number}, threshold {threshold:g}, "
            f"hallucinated when the worst label is {truth_text(hallucinated)} (--hallucinated {hallucinated})",
            f"{'detector':<{width}}  {'n':>6}  {'invalid':>7}  {'missing':>7}  {'bal. acc. %':>11}  "
            f"{'F1-macro %':>10}  consistent when",
        ]
        for detector, row in report.items():
            lines.append(
                f"{detector:<{width}}  {row['n']:>6}  {row['invalid']:>7}  {row['missing']:>7}  "
                f"{_percent(row['balanced_accuracy']):>11}  {_percent(row['f1_macro']):>10}  {row['rule']}"
            )
        lines.extend(f"{detector}: {row['reason']}" for detector, row in report.items() if row.get("reason"))
        lines.append("invalid: every prediction left out of n, missing ones included (n + invalid = samples), and "
                     "numbers written as text (\"0.21\"), which are not read; missing: those with no output at all")
        self.stdout.write("\n".join(lines))


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _hallucinated(text: str) -> str:
    if text not in TRUTH_SETS:
        raise CommandError(f"--hallucinated must be one of {', '.join(TRUTH_SETS)}, not {text!r}")
    return text


def _threshold(text: str) -> float:
    try:
        value = float(str(text))
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:  # also rejects NaN
        raise CommandError(f"--threshold must be a number between 0 and 1, not {text!r}")
    return value
