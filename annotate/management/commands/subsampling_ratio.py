"""The subsampling ratio R (HaDes eq. 1) from a detector's confusion counts, with the action a round takes."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.pairmath.subsampling import SubsamplingRatio, subsampling_ratio


def parse_count(text: Any, option: str) -> int:
    """Parse here rather than with argparse's type=int so call_command users get the same message."""
    try:
        value = int(str(text))
    except ValueError:
        value = -1
    if value < 0:
        raise CommandError(f"{option} must be a whole number >= 0, not {text!r}")
    return value


def format_number(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


def explain(ratio: SubsamplingRatio) -> str:
    """The explanation panel as text: counts, rates, R both ways, the action and why."""
    promised = ratio.promised_h_share()
    lines = [
        "Detector's confusion counts on last round's consensus items (H is positive):",
        f"  TP = {ratio.tp} (H predicted H)   FP = {ratio.fp} (N predicted H)",
        f"  FN = {ratio.fn} (H predicted N)   TN = {ratio.tn} (N predicted N)",
        f"alpha = TP/(TP+FN) = {format_number(ratio.alpha)}   (recall of H)",
        f"beta  = TN/(TN+FP) = {format_number(ratio.beta)}   (recall of N)",
        f"gamma = TP/(TP+FP) = {format_number(ratio.gamma)}   (precision of H)",
        _r_line(ratio),
        f"R closed form from alpha, beta, gamma = {format_number(ratio.closed_form)}"
        + ("   (the formula's value, before R is set to 0)" if _set_to_zero(ratio) and ratio.closed_form else ""),
        f"Action: {ratio.action}: keep {ratio.keep_predicted_h:.2%} of predicted-H items "
        f"and {ratio.keep_predicted_n:.2%} of predicted-N items",
        "H share promised: " + ("none (random sample)" if promised is None else f"{promised:.2%}"),
        f"Why: {ratio.reason}",
    ]
    return "\n".join(lines)


def _set_to_zero(ratio: SubsamplingRatio) -> bool:
    """keep_no_h: (TN-FN)/(TP-FP) is negative with both predicted groups H-majority, and R is 0 (DESIGN.md)."""
    formula = ratio.counts_formula
    return ratio.r is not None and formula is not None and ratio.r != formula


def _r_line(ratio: SubsamplingRatio) -> str:
    if _set_to_zero(ratio):
        return f"R = {format_number(ratio.r)}   ((TN-FN)/(TP-FP) = {format_number(ratio.counts_formula)} < 0: see Why)"
    return f"R from counts (TN-FN)/(TP-FP) = {format_number(ratio.r)}"


class Command(BaseCommand):
    help = "The subsampling ratio R from the detector's confusion counts (TP, FP, TN, FN; H positive) and its action."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tp", required=True, help="H items predicted H")
        parser.add_argument("--fp", required=True, help="N items predicted H")
        parser.add_argument("--tn", required=True, help="N items predicted N")
        parser.add_argument("--fn", required=True, help="H items predicted N")
        parser.add_argument(
            "--min-counts", default="20", help="fewer labelled items than this and R is undefined (default 20)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        counts = {name: parse_count(options[name], f"--{name}") for name in ("tp", "fp", "tn", "fn")}
        min_counts = parse_count(options["min_counts"], "--min-counts")
        try:
            ratio = subsampling_ratio(**counts, min_counts=min_counts)
        except ValueError as error:
            raise CommandError(str(error)) from error
        if options["json"]:
            self.stdout.write(json.dumps(ratio.as_dict()))
            return
        self.stdout.write(explain(ratio))
