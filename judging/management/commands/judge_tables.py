"""The paper's tables (residual, sensitivity, cost) for the judges' latest runs over a synthetic set."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.fields import DateTimeField

from annotate.management.commands.agreement import get_project
from judging.costs import us_dollars
from judging.models import SyntheticSet
from judging.services.synthetic import paper_tables
from judging.tables import judge_label


def figure(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


class Command(BaseCommand):
    help = "Residual, sensitivity and cost tables of every judge's latest run over a synthetic set."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--set", required=True, dest="set_name", help="the synthetic set's name")
        parser.add_argument("--json", action="store_true", help='print {"residual", "sensitivity", "cost", "runs"}')

    def handle(self, *args: Any, **options: Any) -> None:
        project = get_project(options["project"])
        synthetic_set = SyntheticSet.objects.filter(project=project, name=options["set_name"]).first()
        if synthetic_set is None:
            known = ", ".join(project.synthetic_sets.values_list("name", flat=True)) or "none"
            raise CommandError(f"no synthetic set named {options['set_name']!r} in project {project.slug!r} "
                               f"(sets: {known})")
        tables = paper_tables(synthetic_set)
        if options["json"]:
            for row in tables["cost"]["rows"]:
                row["cost"] = us_dollars(row["cost"])  # JSON's precision for US$ (judging.costs)
            for run in tables["runs"]:
                run["cancelled_at"] = DateTimeField().to_representation(run["cancelled_at"])  # as the API writes it
            self.stdout.write(json.dumps(tables, ensure_ascii=False))
            return
        self.stdout.write(self._text(tables))

    def _text(self, tables: dict[str, Any]) -> str:
        if not tables["runs"]:
            return "No judge has run over this set yet."
        lines = ["Mean residual |expected - score| (expected 5 for gold, 1 for hallucinated; overall = over all pairs)"]
        lines.append(f"{'judge':<30} {'mode':<14} {'gold':>6} {'intr.':>6} {'extr.':>6} {'overall':>8} {'failed':>6}")
        for row in tables["residual"]["rows"]:
            lines.append(f"{row['judge']:<30} {row['mode']:<14} {figure(row['gold']):>6} "
                         f"{figure(row['intrinsic']):>6} {figure(row['extrinsic']):>6} {figure(row['overall']):>8} "
                         f"{row['failed']:>6}")
        percents = tables["sensitivity"]["percents"]
        lines += ["", "Mean score per share of sentences replaced; delta per step = (mean at 100% - mean at 0%) / "
                      f"{len(percents) - 1}"]
        lines.append(f"{'judge':<30} {'type':<10} " + " ".join(f"{p:>5}%" for p in percents) + f" {'delta':>7}")
        for row in tables["sensitivity"]["rows"]:
            lines.append(f"{row['judge']:<30} {row['type']:<10} "
                         + " ".join(f"{figure(step['mean']):>6}" for step in row["steps"])
                         + f" {figure(row['delta'], 3):>7}")
        lines += ["", "Per call sent and answered (parse errors included): mean latency (s), output tokens, price (US$)"]
        lines.append(f"{'judge':<30} {'mode':<14} {'latency':>8} {'tokens':>8} {'price':>10} {'calls':>6} "
                     f"{'parse':>6} {'cached':>6} {'errors':>6}")
        for row in tables["cost"]["rows"]:
            lines.append(f"{row['judge']:<30} {row['mode']:<14} {figure(row['latency'], 3):>8} "
                         f"{figure(row['output_tokens'], 1):>8} {figure(row['cost'], 5):>10} {row['calls']:>6} "
                         f"{row['parse_errors']:>6} {row['cached']:>6} {row['errors']:>6}")
        # A price not known is left out of the mean, never counted as 0 (judging.tables.cost_table): say so.
        for row in tables["cost"]["rows"]:
            if row["unpriced"]:
                over = row["cost_calls"]
                lines.append(f"{judge_label(row['judge'], row['mode'])}: price of {row['unpriced']} of {row['calls']} "
                             "calls not known (the judge had no prices when they were sent); "
                             + (f"the mean price is over {over} call{'s' * (over != 1)}" if over else "no mean price"))
        return "\n".join(lines)
