"""What a judgement import reports: the error listing every bad line, and the judges and runs it made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotate.models import Project
from annotate.services.ingest.checks import ImportProblems
from judging.models import JudgeRun


class JudgementImportFailed(ImportProblems):
    """Bad judge outputs: every message names the file, the line and the field; nothing was written."""


@dataclass
class ImportedRun:
    run: JudgeRun
    judge_created: bool
    flagged: int | None = None  # audit items the run flagged, when asked to flag


@dataclass
class JudgementImportReport:
    project: Project
    runs: list[ImportedRun] = field(default_factory=list)

    @property
    def judgements(self) -> int:
        return sum(imported.run.total for imported in self.runs)

    @property
    def flagged(self) -> int | None:
        counts = [imported.flagged for imported in self.runs if imported.flagged is not None]
        return sum(counts) if counts else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "project": self.project.slug,
            "judgements": self.judgements,
            "flagged": self.flagged,
            "runs": [
                {
                    "run": imported.run.pk,
                    "judge": imported.run.judge.name,
                    "judge_created": imported.judge_created,
                    "items": imported.run.total,
                    "scored": imported.run.scored,
                    "failed": imported.run.failed,
                    "flagged": imported.flagged,
                }
                for imported in self.runs
            ],
        }

    def describe(self) -> str:
        parts = []
        for imported in self.runs:
            run = imported.run
            new = ", new judge" if imported.judge_created else ""
            flagged = f", {imported.flagged} flagged" if imported.flagged is not None else ""
            parts.append(f"  {run.judge.name} (run {run.pk}{new}): {run.scored} scored, {run.failed} failed{flagged}")
        return f"imported {self.judgements} judgements into {self.project.slug!r}:\n" + "\n".join(parts)
