"""Agreement of a pairs project's judges: consensus, >= 80% agreement, unanimous, no consensus, Krippendorff's alpha."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project, positive_int
from annotate.models import Project
from annotate.services.pairs.agreement import UnknownRound, pair_agreement


def format_share(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}%"


def format_alpha(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


class Command(BaseCommand):
    help = "Agreement figures of a pairs project over items whose judging is finished, overall or for one round."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--round", default=None, help="one round's number (default: all rounds)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        round_number = None if options["round"] is None else positive_int(options["round"], "--round")
        project = get_project(options["project"])
        if project.kind != Project.Kind.PAIRS:
            raise CommandError(f"project {project.slug!r} is a {project.kind} project, not a pairs project")
        try:
            report = pair_agreement(project, round_number)
        except UnknownRound as error:
            raise CommandError(str(error)) from error
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        self.stdout.write(self._table(project, report))

    def _table(self, project: Project, report: dict[str, Any]) -> str:
        scope = "all rounds" if report["round"] is None else f"round {report['round']}"
        lines = [
            f"Project {project.slug}, {scope}: {report['items']} items with judging finished "
            "(consensus or no consensus), counted judges only",
            f"alpha (Krippendorff, nominal) = {format_alpha(report['alpha'])}"
            + (f" ({report['reason']})" if report["reason"] else ""),
            f"consensus {format_share(report['consensus'])}, >= 80% agreement {format_share(report['agree80'])}, "
            f"unanimous {format_share(report['unanimous'])}, no consensus {format_share(report['no_consensus'])}",
        ]
        if report.get("rounds"):
            lines.append("")
            lines.append(f"{'round':>5}  {'items':>6}  {'alpha':>9}  {'consensus':>9}  {'>=80%':>8}  "
                         f"{'unanimous':>9}  {'none':>8}")
            for entry in report["rounds"]:
                number = "-" if entry["round"] is None else str(entry["round"])
                lines.append(
                    f"{number:>5}  {entry['items']:>6}  {format_alpha(entry['alpha']):>9}  "
                    f"{format_share(entry['consensus']):>9}  {format_share(entry['agree80']):>8}  "
                    f"{format_share(entry['unanimous']):>9}  {format_share(entry['no_consensus']):>8}"
                )
        return "\n".join(lines)
