"""Krippendorff's alpha of a span project's worst-pooled sample labels."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate import agreement
from annotate.models import Project
from annotate.services.stats import project_agreement


def get_project(slug: str) -> Project:
    """The project for --project, or a CommandError that says what exists."""
    project = Project.objects.filter(slug=slug).first()
    if project is None:
        known = ", ".join(Project.objects.order_by("slug").values_list("slug", flat=True)[:20]) or "none"
        raise CommandError(f"no project with slug {slug!r} (projects: {known})")
    return project


def format_alpha(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.4f}"


class Command(BaseCommand):
    help = "Krippendorff's alpha of sample labels under a label scheme (e.g. 'C+B|Q+U')."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--scheme", required=True, help="label scheme, e.g. 'C|U', 'C+B|Q|U', 'C|B|Q|U'")
        parser.add_argument("--level", required=True, help=f"one of {', '.join(agreement.LEVELS)}")
        parser.add_argument("--aggregate", required=True, help=f"one of {', '.join(agreement.AGGREGATES)}")
        parser.add_argument("--round", default="1", help="annotation round (default 1)")
        parser.add_argument(
            "--bootstrap", default="0", help="pooled only: resamples for a 95%% bootstrap interval (default 0: none)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        round_number = positive_int(options["round"], "--round")
        resamples = positive_int(options["bootstrap"], "--bootstrap", allow_zero=True)
        # Argument errors first, so a typo is reported before any database work.
        try:
            agreement.parse_scheme(options["scheme"])
            agreement.check_level(options["level"])
            agreement.check_aggregate(options["aggregate"])
        except ValueError as error:
            raise CommandError(str(error)) from error
        project = get_project(options["project"])
        try:
            report = project_agreement(
                project,
                options["scheme"],
                options["level"],
                options["aggregate"],
                round_number,
                bootstrap=resamples,
            )
        except ValueError as error:
            raise CommandError(str(error)) from error
        if options["json"]:
            self.stdout.write(json.dumps(report))
            return
        self.stdout.write(self._table(project, report))

    def _table(self, project: Project, report: dict[str, Any]) -> str:
        lines = [
            f"Project {project.slug}, round {report['round']}: scheme {report['scheme']}, "
            f"{report['level']}, {report['aggregate']}",
            f"alpha = {format_alpha(report['alpha'])}"
            + (f" ({report['reason']})" if report["reason"] else "")
            + f" over {report['units']} samples, {report['annotators']} annotators"
            + (f" ({note})" if (note := agreement.batch_mean_note(report)) else ""),
        ]
        if report.get("interval"):
            low, high = report["interval"]
            lines.append(f"95% bootstrap interval: [{low:.4f}, {high:.4f}] ({report['bootstrap_resamples']} resamples)")
        if report["per_batch"]:
            width = max(len("batch"), *(len(str(entry["batch"])) for entry in report["per_batch"]))
            lines.append("")
            lines.append(f"{'batch':<{width}}  {'alpha':>9}  {'units':>6}  {'annotators':>10}  reason")
            for entry in report["per_batch"]:
                lines.append(
                    f"{entry['batch']!s:<{width}}  {format_alpha(entry['alpha']):>9}  {entry['units']:>6}  "
                    f"{entry['annotators']:>10}  {entry['reason'] or ''}".rstrip()
                )
        return "\n".join(lines)


def positive_int(text: str, option: str, *, allow_zero: bool = False) -> int:
    """Parse here rather than with argparse's type=int so call_command users get the same message."""
    try:
        value = int(str(text))
    except ValueError:
        value = -1
    if value < (0 if allow_zero else 1):
        wanted = "a whole number >= 0" if allow_zero else "a positive whole number"
        raise CommandError(f"{option} must be {wanted}, not {text!r}")
    return value
