"""Exporting a project's judgements and audits as JSONL or CSV, streamed row by row.

Judgements (one run's, or the whole project's), of the project's samples only
(a run over a synthetic set is refused by name: its figures are the set's
tables), oldest run first, each run's in
JUDGEMENT_ORDER (the samples' order in the project): where the judgement came
from (``sample``: the external id, as the import reads it; ``sample_id``: the
database id, the API's ``sample``; ``sample_external_id``: the external id under
the API's name; batch, judge, kind, mode, run, rubric version) and what it said
(status, score, p, display score, reasoning, raw answer, error, latency, tokens,
cost, cached, per-sentence figures). Latency, tokens and cost are what the run
spent (Judgement.run_*): an answer from the call cache has null latency and
tokens and cost 0, and the earlier call's figures in the ``cached_call_*``
columns, so summing a run's rows gives what it cost; a call that reported its
tokens while the judge had no prices has cost null, not known, never 0
(Judgement.cost_unpriced; an imported judgement's is the file's). An absent reasoning, raw
answer or error is null (an empty cell in CSV), and a rubric score's display
score an integer (only an NLI judge's 1 + 4p is a fraction). The JSONL keys are the import's
(judging.services.ingest), so an export imports again elsewhere; ``run`` keeps
a judge's runs apart there (a judge run twice has two judgements of a sample).

Audits: one answered audit a row (item, sample, auditor, score, agreed,
reasoning marked wrong, note, seconds, blind, the score given blind, the judge
and the score shown, when it was answered and last changed; then the sample's
database id, and the judgement and run of the judge's answer shown);
every auditor's, or one auditor's (what an auditor downloads: their own).

The command writes a file; the pages and the API stream the same lines after
:func:`read_export_request` has checked what was asked, so a bad choice is a
400 naming it before any byte of a 200 is sent.

A CSV export starts with the UTF-8 byte order mark when asked (``bom``), as the
span export does and with its mark and refusal (annotate.services.export):
Excel needs it to read the file as UTF-8. Off by default, so the bytes scripts
read stay as they were; any other format asked with it is refused.

There is no API key to leak: judges store only the name of the environment
variable that holds one, and no export writes even that name.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from annotate.models import Project
from annotate.services.export import UTF8_BOM, bom_refusal
from annotate.services.export.whole_files import whole_file
from annotate.spreadsheet import text_row
from judging.costs import us_dollars
from judging.models import Audit, Judgement, JudgeRun
from judging.services.runs.summary import JUDGEMENT_ORDER

WHAT = ("judgements", "audits")
FORMATS = ("jsonl", "csv")
CHUNK = 2000

# The columns added since the first ones go last, so a CSV read by column position keeps reading the same values.
JUDGEMENT_FIELDS = (
    "sample", "batch", "judge", "kind", "mode", "run", "rubric_version", "status", "score", "p", "display_score",
    "reasoning", "raw", "error", "latency", "input_tokens", "output_tokens", "cost", "cached", "sentence_scores",
    "sample_id", "sample_external_id", "cached_call_latency", "cached_call_input_tokens", "cached_call_output_tokens",
)
AUDIT_FIELDS = (
    "item", "sample", "batch", "auditor", "score", "agreed", "reasoning_wrong", "note", "seconds", "blind",
    "blind_score", "judge", "judge_score_seen", "answered_at", "changed_at", "sample_id", "judgement", "run",
)


def _display_score(judgement: Judgement) -> int | float | None:
    """The 1-5 figure as the judge gave it: a rubric score stays an integer (2, not 2.0); only an NLI judge's
    1 + 4p is a fraction."""
    return judgement.score if judgement.score is not None else judgement.display_score


# What judgement_row reads besides the judgement: select_related with these, or each row costs queries.
JUDGEMENT_ROW_RELATED = ("run__judge", "run__rubric", "prompt_version", "sample__batch")


def judgement_rows(project: Project, *, run: JudgeRun | None = None) -> Iterator[dict[str, Any]]:
    """Every judgement of the project's samples (or of one run), oldest run first, each run's in JUDGEMENT_ORDER."""
    found = Judgement.objects.filter(run__project=project, sample__isnull=False)
    if run is not None:
        found = found.filter(run=run)
    found = found.select_related(*JUDGEMENT_ROW_RELATED).order_by("run_id", *JUDGEMENT_ORDER)
    for judgement in found.iterator(chunk_size=CHUNK):
        yield judgement_row(judgement)


def judgement_row(judgement: Judgement) -> dict[str, Any]:
    """One judgement as the exports write it (JUDGEMENT_FIELDS), and as `judge --json` lists it (run_summary adds
    its own few keys), so the two cannot tell a judgement differently. A synthetic item's judgement (never exported:
    its figures are the set's tables) has null sample, batch and ids."""
    judge = judgement.run.judge
    version = judgement.prompt_version or judgement.run.rubric
    sample = judgement.sample
    return {
        "sample": sample.external_id if sample is not None else None,
        "batch": sample.batch.name if sample is not None else None,
        "judge": judge.name,
        "kind": judge.kind,
        "mode": judge.mode,
        "run": judgement.run_id,
        "rubric_version": version.number if version is not None else None,
        "status": judgement.status,
        "score": judgement.score,
        "p": judgement.probability,
        "display_score": _display_score(judgement),
        # Blank means absent (a score-only answer has no reasoning, a clean call no error): null, as the
        # import reads it, never "" (CSV writes both as an empty cell).
        "reasoning": judgement.reasoning or None,
        "raw": judgement.raw or None,
        "error": judgement.error or None,
        "latency": judgement.run_latency_seconds,
        "input_tokens": judgement.run_input_tokens,
        "output_tokens": judgement.run_output_tokens,
        "cost": us_dollars(judgement.run_cost),
        "cached": judgement.cached,
        "sentence_scores": judgement.sentence_scores,
        "sample_id": judgement.sample_id,
        "sample_external_id": sample.external_id if sample is not None else None,
        "cached_call_latency": judgement.cached_call_latency_seconds,
        "cached_call_input_tokens": judgement.cached_call_input_tokens,
        "cached_call_output_tokens": judgement.cached_call_output_tokens,
    }


def audit_rows(project: Project, *, auditor: AbstractBaseUser | None = None) -> Iterator[dict[str, Any]]:
    """Every answered audit of the project, or one auditor's (served but unanswered ones hold no verdict yet)."""
    found = Audit.objects.filter(item__project=project, answered_at__isnull=False)
    if auditor is not None:
        found = found.filter(auditor=auditor)
    found = found.select_related("item__sample__batch", "auditor", "judgement__run__judge").order_by("item_id", "id")
    for audit in found.iterator(chunk_size=CHUNK):
        seen = audit.judgement
        yield {
            "item": audit.item_id,
            "sample": audit.item.sample.external_id,
            "batch": audit.item.sample.batch.name,
            "auditor": audit.auditor.get_username(),
            "score": audit.score,
            "agreed": audit.agreed,
            "reasoning_wrong": audit.reasoning_wrong,
            "note": audit.note,
            "seconds": audit.seconds,
            "blind": audit.blind,
            # The score given before the judges were revealed, when one was: kept when the auditor then changed it.
            "blind_score": audit.blind_score,
            "judge": seen.run.judge.name if seen is not None else None,
            "judge_score_seen": _display_score(seen) if seen is not None else None,
            "answered_at": audit.answered_at.isoformat() if audit.answered_at else None,
            "changed_at": audit.changed_at.isoformat() if audit.changed_at else None,
            # Added last (CSV columns keep their places): the sample's database id, to join on (external ids repeat
            # across batches), and the judge's answer the auditor saw: its judgement id (the audits API's
            # ``judgement``) and run (the judgements export's ``run``; with ``sample_id``, that judgement's row).
            "sample_id": audit.item.sample_id,
            "judgement": audit.judgement_id,
            "run": seen.run_id if seen is not None else None,
        }


def jsonl_lines(rows: Iterable[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False) + "\n"


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return value


def csv_lines(rows: Iterable[dict[str, Any]], fields: tuple[str, ...], *, bom: bool = False) -> Iterator[str]:
    """A header, then a row a line; empty cells for nulls, true/false for flags, lists as JSON. With ``bom`` the
    header's piece starts with the byte order mark: the file's first bytes, where Excel looks for it."""
    buffer = io.StringIO()
    if bom:
        buffer.write(UTF8_BOM)
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(fields)
    yield flush()
    for row in rows:
        writer.writerow(text_row([_cell(row[name]) for name in fields]))
        yield flush()


def export_lines(
    project: Project,
    *,
    what: str,
    format: str,
    run: JudgeRun | None = None,
    auditor: AbstractBaseUser | None = None,
    bom: bool = False,
) -> Iterator[str]:
    """The export as text pieces, for a streamed download or a file; ``auditor`` narrows audits to theirs, ``bom``
    starts a CSV export with the byte order mark (for Excel)."""
    if what not in WHAT:
        raise ValueError(f"what must be one of {', '.join(WHAT)}, not {what!r}")
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    if bom and (refusal := bom_refusal(format)) is not None:
        raise ValueError(f"bom: {refusal}")
    if what == "audits" and run is not None:
        raise ValueError("a run narrows judgements, not audits")
    if what == "judgements" and auditor is not None:
        raise ValueError("an auditor narrows audits, not judgements")
    rows = judgement_rows(project, run=run) if what == "judgements" else audit_rows(project, auditor=auditor)
    if format == "jsonl":
        return jsonl_lines(rows)
    return csv_lines(rows, JUDGEMENT_FIELDS if what == "judgements" else AUDIT_FIELDS, bom=bom)


def write_export(
    project: Project, out: Path, *, what: str, format: str, run: JudgeRun | None = None, bom: bool = False
) -> int:
    """Write the export to ``out``; returns the number of rows (the CSV header not counted). The choices are
    checked before the file is opened, so a refused one leaves ``out`` as it was."""
    pieces = export_lines(project, what=what, format=format, run=run, bom=bom)
    count = 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with whole_file(out, "w", encoding="utf-8", newline="") as handle:  # whole or absent, as span exports
        for piece in pieces:
            handle.write(piece)
            count += 1
    return count - (1 if format == "csv" else 0)


class ExportRefused(ValueError):
    """A download asked for something that cannot be exported; ``field`` names the choice at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class ExportRequest:
    """A checked download: what, in which format, narrowed to one run (judgements) or one auditor (audits)."""

    project: Project
    what: str
    format: str
    run: JudgeRun | None = None
    auditor: AbstractBaseUser | None = None
    bom: bool = False  # a CSV export starts with the byte order mark, for Excel

    @property
    def filename(self) -> str:
        """``demo-judgements.jsonl``, ``demo-run-12-judgements.csv``, ``demo-audits.csv``, ``demo-my-audits.jsonl``;
        ``-excel`` before ``.csv`` for the CSV with a byte order mark, as the span export names it."""
        narrowed = f"run-{self.run.pk}-" if self.run is not None else ("my-" if self.auditor is not None else "")
        excel = "-excel" if self.bom else ""
        return f"{self.project.slug}-{narrowed}{self.what}{excel}.{self.format}"

    @property
    def content_type(self) -> str:
        return "application/jsonl; charset=utf-8" if self.format == "jsonl" else "text/csv; charset=utf-8"

    def lines(self) -> Iterator[str]:
        return export_lines(self.project, what=self.what, format=self.format, run=self.run, auditor=self.auditor,
                            bom=self.bom)


# How a page's link or form says yes or no to the byte order mark (the API's serializer reads its own).
BOM_YES = ("1", "true", "on")
BOM_NO = ("", "0", "false", "off")


def read_bom(value: str | None) -> bool:
    """``bom`` as typed in a query: absent or one of BOM_NO is no, one of BOM_YES yes; anything else is refused
    rather than guessed."""
    text = (value or "").strip().lower()
    if text in BOM_YES or text in BOM_NO:
        return text in BOM_YES
    raise ExportRefused("bom", f"{value!r} is not yes or no: give bom=1 for a CSV file for Excel, or leave it out")


def synthetic_run_refusal(run: JudgeRun) -> str | None:
    """Why a run's judgements are not exported, or None: a run over a synthetic set judged its items, not the
    project's samples, and its figures are the set's tables (``judge_tables``, the set's page and API)."""
    if run.synthetic_set_id is None:
        return None
    synthetic_set = run.synthetic_set
    return (f"judge run {run.pk} judged the synthetic set {synthetic_set.name!r}, not the project's samples, so it "
            "has no judgements to export: its figures are the set's tables (the set's page, "
            f"/api/projects/{run.project.slug}/synthetic-sets/{synthetic_set.pk}/tables/, or manage.py judge_tables "
            f"--project {run.project.slug} --set {synthetic_set.name!r})")


def read_export_request(
    project: Project,
    *,
    what: str,
    format: str,
    run: str | None = None,
    auditor: AbstractBaseUser | None = None,
    bom: str | None = None,
) -> ExportRequest:
    """Check a download's choices as typed (query values); ExportRefused names the first one that cannot be used."""
    if what not in WHAT:
        raise ExportRefused("what", f"what must be one of {', '.join(WHAT)}, not {what!r}")
    if format not in FORMATS:
        raise ExportRefused("format", f"format must be one of {', '.join(FORMATS)}, not {format!r}")
    with_bom = read_bom(bom)
    if with_bom and (refusal := bom_refusal(format)) is not None:
        raise ExportRefused("bom", refusal)
    chosen = None
    if run not in (None, ""):
        if what != "judgements":
            raise ExportRefused("run", "a run narrows judgements, not audits")
        text = str(run)
        # More than 18 digits names no run (and would overflow the id column): refused like any other id.
        if text.isdigit() and len(text) <= 18:
            chosen = JudgeRun.objects.filter(project=project, pk=int(text)).first()
        if chosen is None:
            raise ExportRefused("run", f"no judge run {text!r} in project {project.slug!r}")
        if (refusal := synthetic_run_refusal(chosen)) is not None:
            raise ExportRefused("run", refusal)
    return ExportRequest(project=project, what=what, format=format, run=chosen, auditor=auditor, bom=with_bom)
