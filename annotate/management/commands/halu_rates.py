"""Hallucination rate of each generator: share of samples whose worst label is U, U or Q, U or Q or B.

Prints the results API's object (stats.explained_halu_rates): every generator of the project, one without a
submitted verdict in the round (round 2 before anyone submits it) with n 0, no rates and the reason.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project, positive_int
from annotate.results import RATE_COLUMNS, rank_generators
from annotate.services.stats import explained_halu_rates


class Command(BaseCommand):
    help = "Hallucination rates per generator (percent of samples whose worst label is in U, U+Q, U+Q+B)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--round", default="1", help="annotation round (default 1)")
        parser.add_argument("--json", action="store_true", help="print one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        round_number = positive_int(options["round"], "--round")
        project = get_project(options["project"])
        try:
            rates = explained_halu_rates(project, round_number)
        except ValueError as error:
            raise CommandError(str(error)) from error
        if options["json"]:
            self.stdout.write(json.dumps(rates))
            return
        if not rates:
            self.stdout.write(f"Project {project.slug}, round {round_number}: no annotated samples")
            return
        scored = {generator: row for generator, row in rates.items() if row["n"]}
        ranks = rank_generators(scored)
        width = max(len("generator"), *(len(name) for name in rates))
        header = f"{'generator':<{width}}  {'n':>6}" + "".join(
            f"  {column + ' %':>9}  {'rank':>4}" for column in RATE_COLUMNS
        )
        lines = [f"Project {project.slug}, round {round_number} (rank 1 = fewest hallucinations)", header]
        for generator, row in sorted(scored.items(), key=lambda item: (item[1]["U+Q"], item[0])):
            cells = "".join(f"  {row[column]:>9.2f}  {ranks[column][generator]:>4}" for column in RATE_COLUMNS)
            lines.append(f"{generator:<{width}}  {row['n']:>6}{cells}")
        unscored = {generator: row for generator, row in rates.items() if not row["n"]}
        for generator in unscored:
            lines.append(f"{generator:<{width}}  {0:>6}" + f"  {'-':>9}  {'-':>4}" * len(RATE_COLUMNS))
        lines.extend(f"{generator}: {row['reason']}" for generator, row in unscored.items())
        self.stdout.write("\n".join(lines))
