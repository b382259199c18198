"""The round wizard from the command line: preview the funnel, or create the next round of a pairs project."""

from __future__ import annotations

import json
import math
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project, positive_int
from annotate.models import Project
from annotate.services.pairs import rounds, vectors


class Command(BaseCommand):
    help = (
        "Preview (--preview) or create the next round of a pairs project: round 1 at random, later rounds through "
        "the detector funnel (P(H) band, paraphrase and date/name filters, subsampling ratio R). Span vectors "
        "missing for a later round are computed first."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="pairs project slug")
        parser.add_argument("--preview", action="store_true", help="print the funnel and R; change nothing")
        parser.add_argument("--size", default=str(rounds.DEFAULT_SIZE),
                            help=f"items to draw (default {rounds.DEFAULT_SIZE})")
        parser.add_argument("--low", default=str(rounds.DEFAULT_LOW),
                            help=f"lowest P(H) kept (default {rounds.DEFAULT_LOW})")
        parser.add_argument("--high", default=str(rounds.DEFAULT_HIGH),
                            help=f"highest P(H) kept (default {rounds.DEFAULT_HIGH})")
        parser.add_argument("--paraphrase-max", default=str(rounds.DEFAULT_PARAPHRASE_MAX),
                            help=f"paraphrase similarity above which an item is dropped "
                                 f"(default {rounds.DEFAULT_PARAPHRASE_MAX})")
        parser.add_argument("--drop-fraction", default=str(rounds.DEFAULT_DROP_FRACTION),
                            help=f"share of date/name swaps dropped (default {rounds.DEFAULT_DROP_FRACTION})")
        parser.add_argument("--seed", default=None, help="random seed (default: a new one, printed)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        project = get_project(options["project"])
        if project.kind != Project.Kind.PAIRS:
            raise CommandError(f"project {project.slug!r} is not a pairs project (its kind is {project.kind!r})")
        params = {
            "size": positive_int(options["size"], "--size"),
            "low": _probability(options["low"], "--low", 0.0),
            "high": _probability(options["high"], "--high", 0.0),
            "paraphrase_max": _probability(options["paraphrase_max"], "--paraphrase-max", -1.0),
            "drop_fraction": _probability(options["drop_fraction"], "--drop-fraction", 0.0),
            "seed": None if options["seed"] is None else positive_int(options["seed"], "--seed", allow_zero=True),
        }
        computed = 0
        if rounds.next_round_number(project) > 1:
            # Later rounds need every span vector. A preview computes missing ones too: they are a kept cache
            # of the encoder's output, not workflow state, and no round, item state or detector changes.
            computed = self._compute_vectors(project, quiet=options["json"])
        plan = rounds.preview_round(project, **params)
        unfinished = rounds.unfinished_open_round(project)
        created = None
        if plan.refusal is None and not options["preview"]:
            params["seed"] = plan.seed
            try:
                # The round previewed above or none: another admin's round created meanwhile refuses this one.
                created = rounds.create_round(project, None, number=plan.number, **params)
            except rounds.RoundRefused as refusal:
                plan.refusal = str(refusal)
        if options["json"]:
            self.stdout.write(json.dumps({**plan.as_dict(), "preview": bool(options["preview"]),
                                          "created": created is not None, "vectors_computed": computed}))
        else:
            self.stdout.write(_describe(project, plan, options["preview"], created is not None))
            if unfinished is not None and plan.refusal is None:
                self.stdout.write(_unfinished_note(unfinished, created is not None))
        if plan.refusal is not None:
            raise CommandError(plan.refusal)

    def _compute_vectors(self, project: Project, *, quiet: bool) -> int:
        encoder = vectors.encoder_name(project)
        missing = vectors.stale_items(project, encoder).count()
        if not missing:
            return 0
        if not quiet:
            self.stderr.write(f"Computing span vectors of {missing} items with {encoder}...")
        try:
            return vectors.compute_vectors(project, encoder=encoder)
        except vectors.EncoderUnavailable as error:
            raise CommandError(str(error)) from error


def _probability(text: str, option: str, least: float) -> float:
    try:
        value = float(str(text))
    except ValueError:
        value = math.nan
    if not least <= value <= 1.0:  # also rejects NaN
        raise CommandError(f"{option} must be a number from {least:g} to 1, not {text!r}")
    return value


def _describe(project: Project, plan: rounds.RoundPlan, preview: bool, created: bool) -> str:
    lines = [f"Project {project.slug}, round {plan.number}, seed {plan.seed}"
             + (" (preview: nothing changed)" if preview else "")]
    width = max((len(row["step"]) for row in plan.funnel), default=0)
    for row in plan.funnel:
        lines.append(f"  {row['step']:<{width}}  {row['count']:>7}  {row['explanation']}")
    if plan.number > 1 and plan.ratio is not None:
        ratio = plan.ratio
        r = "undefined" if ratio.r is None else f"{ratio.r:.4g}"
        closed = "undefined" if ratio.closed_form is None else f"{ratio.closed_form:.4g}"
        lines.append(f"R = {r} (closed form {closed}); counts TP {ratio.tp}, FP {ratio.fp}, TN {ratio.tn}, "
                     f"FN {ratio.fn}; action {ratio.action}")
        lines.append(f"  {ratio.reason}")
        lines.append(f"  Counts from: {plan.ratio_source}")
        if plan.promised_h_share is not None:
            lines.append(f"  Promised share of H among the drawn items: {plan.promised_h_share:.3f}")
        if plan.selection_balance is not None:
            expected = plan.selection_balance["expected_h_share"]
            lines.append("  Expected share of H of this selection: "
                         + ("undefined" if expected is None else f"{expected:.3f}"))
            lines.append(f"  {plan.selection_balance['explanation']}")
    elif plan.number > 1 and plan.ratio_source:
        lines.append(f"R: {plan.ratio_source}")
    if plan.refusal is not None:
        lines.append(f"Refused: {plan.refusal}")
    elif created:
        lines.append(f"Created round {plan.number} with {len(plan.selected)} items; it is open to the project's "
                     "annotators.")
    else:
        lines.append(f"Would draw {len(plan.selected)} items.")
    return "\n".join(lines)


def _unfinished_note(unfinished: dict[str, Any], created: bool) -> str:
    """What closing the open round does to its items still being judged (before, or once it is done)."""
    if not created:
        return f"Note: {unfinished['message']}"
    return (f"Closed round {unfinished['round']}: its {unfinished['items']} items still being judged "
            f"({unfinished['answers_missing']} answers missing) are no longer served and stay without a decision.")
