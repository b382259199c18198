"""What a judgement import reports: the error listing every bad line, and the judges and runs it made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.template.defaultfilters import pluralize

from annotate.models import Project
from annotate.services.ingest.checks import ImportProblems
from judging.models import JudgeRun
from judging.services.triage import FlaggedByRuns


class JudgementImportFailed(ImportProblems):
    """Bad judge outputs: every message names the file, the line and the field; nothing was written."""


@dataclass
class ImportedRun:
    run: JudgeRun
    judge_created: bool
    flagged: int | None = None  # samples the run flagged, when asked to flag (another run may flag them too)


@dataclass
class JudgementImportReport:
    project: Project
    runs: list[ImportedRun] = field(default_factory=list)
    queued: FlaggedByRuns | None = None  # what the runs put in the audit queue, when asked to flag

    @property
    def judgements(self) -> int:
        return sum(imported.run.total for imported in self.runs)

    @property
    def flagged(self) -> int | None:
        """Samples the import's runs flagged, each once: two judges flagging one sample make one audit item, so the
        per-run counts would count it twice."""
        return len(self.queued.samples) if self.queued is not None else None

    @property
    def flagged_new(self) -> int | None:
        """Of the flagged samples, those that were not in the audit queue before this import."""
        return self.queued.new if self.queued is not None else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "project": self.project.slug,
            "judgements": self.judgements,
            "flagged": self.flagged,
            "flagged_new": self.flagged_new,
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
        if self.queued is not None:
            parts.append(self._describe_queue(self.queued))
        count = self.judgements
        return f"imported {count} judgement{pluralize(count)} into {self.project.slug!r}:\n" + "\n".join(parts)

    @staticmethod
    def _describe_queue(queued: FlaggedByRuns) -> str:
        """One line for the whole import: a sample two runs flag is counted once, as the queue holds it once."""
        total = len(queued.samples)
        return (f"in all: {total} distinct {'sample' if total == 1 else 'samples'} flagged, in the audit queue "
                f"({queued.new} newly added, {len(queued.already_queued)} already there)")
