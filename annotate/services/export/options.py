"""What an export is asked for: the formats and their names, the checked options, the download's name.

Every caller (API, command, project page, background job) builds an ExportOptions and has it checked here, so a
bad format or a round the project lacks is refused the same way everywhere, before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from annotate.models import Assignment, Project, SpanAnnotation
from annotate.services.stats import project_rounds

Format = Literal["faithbench", "jsonl", "csv"]
FORMATS: tuple[str, ...] = ("faithbench", "jsonl", "csv")
# What a download of each format is sent as, by the API and by the project page's download link alike.
CONTENT_TYPES: dict[str, str] = {
    "faithbench": "application/zip", "jsonl": "application/jsonl; charset=utf-8", "csv": "text/csv; charset=utf-8",
}
# Each format's name as the export form gives it; the exports table names past exports the same way.
FORMAT_NAMES: dict[str, str] = {
    "faithbench": "FaithBench batch files (.zip)", "jsonl": "JSONL, a sample a line", "csv": "CSV, a span a row",
}
# The UTF-8 byte order mark, which Excel needs to read a CSV file as UTF-8 (without it, "Inés" shows as "InÃ©s").
# Opt-in, for CSV only: scripts read the default bytes, and JSON has no place for it.
UTF8_BOM = "\ufeff"
BOM_FORMATS: tuple[str, ...] = ("csv",)
# Round 1 is each annotator's own work; round 2 reconciles it (annotate.services.rounds.RECONCILIATION_ROUND).
ROUND_NAMES: dict[int, str] = {1: "round 1 (independent)", 2: "round 2 (reconciliation)"}


class ExportError(ValueError):
    """An export that cannot run as asked. With a ``field``, the message starts with the option at fault
    ("round: ..."), and ``detail`` is the rest, for an API that puts it under that field's name."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.detail = message


def export_rounds(project: Project) -> list[int]:
    """The rounds an export can be asked for: round 1, which every project starts in (its samples export
    before anyone is assigned), every round with assignments (stats.project_rounds, the results page's
    rounds), and every round holding spans (work left by an unassigned annotator stays exportable)."""
    with_spans = (
        SpanAnnotation.objects.filter(sample__project=project).order_by().values_list("round", flat=True).distinct()
    )
    return sorted({1, *project_rounds(project), *with_spans})


def _round_exists(project: Project, round: int) -> bool:
    """export_rounds' test for one round, with a query or two instead of listing them all."""
    return (
        round == 1
        or Assignment.objects.filter(batch__project=project, round=round).exists()
        or SpanAnnotation.objects.filter(sample__project=project, round=round).exists()
    )


def bom_refusal(fmt: str) -> str | None:
    """Why a byte order mark cannot be asked for with ``fmt``, or None when it can: one message for the API, the
    command and the page."""
    if fmt in BOM_FORMATS:
        return None
    return (f"the byte order mark (for Excel) is for the csv format only; {fmt or 'this format'} is written without "
            "one, so leave it out")


@dataclass(frozen=True)
class ExportOptions:
    format: str = "faithbench"
    round: int = 1
    pseudonyms: bool = False
    bom: bool = False  # CSV starts with UTF8_BOM, for Excel

    @classmethod
    def of_job(cls, stored: dict[str, Any]) -> ExportOptions:
        """The options an export job was started with, from its ``options``, which also keep what happened to the
        job (who cancelled it, how often a worker resumed it: annotate.services.jobs)."""
        names = {field.name for field in fields(cls)}
        return cls(**{name: value for name, value in stored.items() if name in names})

    def check(self, project: Project) -> ExportOptions:
        """Refuse what no export can give, before anything is written or a response has begun: every
        caller (API, command, page, background job) goes through here."""
        if self.format not in FORMATS:
            raise ExportError(f"{self.format!r} is not one of {', '.join(FORMATS)}", "format")
        if self.bom and (refusal := bom_refusal(self.format)) is not None:
            raise ExportError(refusal, "bom")
        if isinstance(self.round, bool) or not isinstance(self.round, int) or self.round < 1:
            raise ExportError(f"{self.round!r} is not a round number (1, 2, ...)", "round")
        if not _round_exists(project, self.round):
            # Otherwise the export would be every sample marked with a round that has no work at all.
            known = ", ".join(map(str, export_rounds(project)))
            raise ExportError(f"project {project.slug!r} has no round {self.round} (its rounds: {known})", "round")
        return self


def describe_options(options: dict[str, Any]) -> str:
    """A past export's settings in the export form's words: "JSONL, a sample a line · round 2 (reconciliation) ·
    pseudonyms". Read from a job's stored options, so a format or round unknown today is still shown as stored."""
    fmt, round = options.get("format", ""), options.get("round")
    parts = [FORMAT_NAMES.get(fmt, str(fmt)), ROUND_NAMES.get(round, f"round {round}") if round is not None else ""]
    if options.get("pseudonyms"):
        parts.append("pseudonyms instead of names")
    if options.get("bom"):
        parts.append("for Excel")
    return " · ".join(part for part in parts if part)


def export_stem(project: Project, options: ExportOptions) -> str:
    """An export's name without its suffix: ``<slug>-round<N>``, with ``-pseudonyms`` when it names annotators by
    pseudonym and ``-excel`` for the CSV with a byte order mark, so that no two exports of a round share a file
    name (or the zip's folder), and the one for Excel is told from the one for scripts."""
    pseudonyms = "-pseudonyms" if options.pseudonyms else ""
    excel = "-excel" if options.bom else ""
    return f"{project.slug}-round{options.round}{pseudonyms}{excel}"


def download_name(project: Project, options: ExportOptions) -> str:
    """The file name a download gets: ``<stem>.jsonl``/``.csv``, or ``.zip`` of the FaithBench files (export_stem)."""
    suffix = "zip" if options.format == "faithbench" else options.format
    return f"{export_stem(project, options)}.{suffix}"
