"""Judgements an import repeats: lines imported into the project before, found by what they say.

Without this check, importing the same export twice makes every run again.
An import does not keep the ``run`` a line names (JudgeRun has no field for
it, and adding one needs a migration), so "the same" is read from the
judgements themselves: the same imported judge, the same sample, the same
values (status, score or p, reasoning, raw, error, latency, tokens, cost,
cached, per-sentence figures).

- Lines that name a run (``"run"``, as every export's lines do) are one group
  per judge and run. The group repeats an earlier imported run of that judge
  when that run holds all of its judgements; each earlier run answers for one
  group only, so an export of a judge run twice with identical answers (a
  deterministic model) still imports as two runs, and again as two repeats.
- Lines that name none repeat one by one: a line repeats when any imported run
  of its judge holds the same judgement of its sample.

A group repeated whole, or in part, refuses the whole import
(:class:`JudgementsAlreadyImported`), each group named with its lines, the
run that holds them and when it was imported. In part: a run imports whole
and once, so the new lines import once the repeated ones are removed (then
as a run of their own).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.template.defaultfilters import pluralize
from django.utils import timezone

from annotate.services.pairs.ingest.repeats import line_ranges
from judging.models import Judge, Judgement, JudgeRun
from judging.services.ingest.lines import ParsedJudgement
from judging.services.ingest.report import JudgementImportFailed

Values = tuple[Any, ...]
# What a judgement said, in the order _parsed_values gives the same from a line.
STORED_VALUES = (
    "status", "score", "probability", "reasoning", "raw", "error", "latency_seconds", "input_tokens",
    "output_tokens", "cost", "sentence_scores", "cached",
)
RunKey = tuple[str, str | None]


class JudgementsAlreadyImported(JudgementImportFailed):
    """The files are well formed, but some of their judgements were imported before; nothing was written.

    Apart from the other refusals because the files are not at fault: what is
    stored already is (the API answers 409, not 400).
    """

    def summary(self) -> str:
        if self.total == 1:
            return self.messages[0]
        return f"{self.total} groups of lines were imported before:\n" + "\n".join(self.messages)

    @property
    def detail(self) -> str:
        """One sentence for an answer that lists the groups apart (the API's ``detail``)."""
        if self.total == 1:
            return f"Nothing was imported: {self.messages[0]}"
        return f"Nothing was imported: {self.total} groups of lines were imported before (each named in 'file')."


@dataclass
class EarlierRun:
    """An imported run of one of the judges the files name, with what each of its judgements said."""

    pk: int
    created_at: datetime
    said: dict[int, Values]  # sample id -> values

    def holds(self, entry: ParsedJudgement) -> bool:
        return self.said.get(entry.sample_id) == _parsed_values(entry)

    @property
    def named(self) -> str:
        """``12 on 2025-06-01 14:03``: the run's id and when it was imported (the project's time zone)."""
        return f"{self.pk} on {timezone.localtime(self.created_at):%Y-%m-%d %H:%M}"


def _sentence_scores(scores: Sequence[float | None] | None) -> tuple[float | None, ...] | None:
    return None if scores is None else tuple(None if figure is None else float(figure) for figure in scores)


def _parsed_values(entry: ParsedJudgement) -> Values:
    return (
        entry.status, entry.score, entry.probability, entry.reasoning, entry.raw, entry.error, entry.latency,
        entry.input_tokens, entry.output_tokens, entry.cost, _sentence_scores(entry.sentence_scores), entry.cached,
    )


def _stored_values(row: tuple[Any, ...]) -> Values:
    *before, sentence_scores, cached = row
    return (*before, _sentence_scores(sentence_scores), cached)


def _earlier_runs(judges: Iterable[Judge]) -> dict[int, list[EarlierRun]]:
    """Judge id -> its imported runs, oldest first, each with its judgements' values by sample."""
    ids = [judge.pk for judge in judges]
    runs: dict[int, EarlierRun] = {}
    by_judge: dict[int, list[EarlierRun]] = defaultdict(list)
    found = JudgeRun.objects.filter(judge_id__in=ids, scope=JudgeRun.Scope.IMPORTED).order_by("created_at", "id")
    for pk, judge_id, created_at in found.values_list("pk", "judge_id", "created_at"):
        runs[pk] = EarlierRun(pk=pk, created_at=created_at, said={})
        by_judge[judge_id].append(runs[pk])
    # Joined, not `run_id IN (...)`: a judge imported many times has more runs than SQLite takes parameters.
    judgements = Judgement.objects.filter(run__judge_id__in=ids, run__scope=JudgeRun.Scope.IMPORTED,
                                          sample__isnull=False)
    for run_id, sample_id, *values in judgements.values_list("run_id", "sample_id", *STORED_VALUES).iterator(
        chunk_size=5000
    ):
        runs[run_id].said[sample_id] = _stored_values(tuple(values))
    return by_judge


def _these(count: int) -> str:
    return "this judgement was" if count == 1 else f"these {count} judgements were"


def _runs_named(runs: Sequence[EarlierRun]) -> str:
    """``run 12 on <date>``, or ``runs 12 on <date> and 14 on <date>``."""
    if len(runs) == 1:
        return f"run {runs[0].named}"
    return "runs " + ", ".join(run.named for run in runs[:-1]) + f" and {runs[-1].named}"


def _message(key: RunKey, entries: list[ParsedJudgement], repeated: list[ParsedJudgement],
             runs: Sequence[EarlierRun]) -> str:
    name, label = key
    judge = f"judge {name!r}" + ("" if label is None else f" (run {label!r})")
    if len(repeated) == len(entries):
        return (f"{line_ranges([entry.line for entry in entries])}: {judge}: {_these(len(entries))} imported "
                f"before, as {_runs_named(runs)} (the same samples with the same values)")
    new = len(entries) - len(repeated)
    return (
        f"{line_ranges([entry.line for entry in repeated])}: {judge}: {len(repeated)} of its {len(entries)} "
        f"judgements {'was' if len(repeated) == 1 else 'were'} imported before, as {_runs_named(runs)} (the same "
        f"samples with the same values); the other {new} {'is' if new == 1 else 'are'} new. A run imports whole "
        f"and once: remove the repeated line{pluralize(len(repeated))} to import the new "
        f"{'one as a run of its' if new == 1 else 'ones as a run of their'} own"
    )


def _named_run(
    entries: list[ParsedJudgement], runs: list[EarlierRun], claimed: set[int]
) -> tuple[list[ParsedJudgement], list[EarlierRun]]:
    """The lines of a named run that an earlier run holds: all of them (that run is then claimed), or the most any
    one run holds."""
    best: tuple[list[ParsedJudgement], list[EarlierRun]] = ([], [])
    for run in runs:
        if run.pk in claimed:
            continue
        held = [entry for entry in entries if run.holds(entry)]
        if len(held) == len(entries):
            claimed.add(run.pk)
            return held, [run]
        if len(held) > len(best[0]):
            best = (held, [run])
    return best


def _unnamed_lines(entries: list[ParsedJudgement], runs: list[EarlierRun]) -> tuple[list[ParsedJudgement],
                                                                                      list[EarlierRun]]:
    """The lines that some earlier run holds, and those runs, oldest first."""
    held, holders = [], {}
    for entry in entries:
        run = next((run for run in runs if run.holds(entry)), None)
        if run is not None:
            held.append(entry)
            holders[run.pk] = run
    return held, sorted(holders.values(), key=lambda run: (run.created_at, run.pk))


def check_repeats(by_run: dict[RunKey, list[ParsedJudgement]], judges: dict[str, Judge | None]) -> None:
    """Refuse (JudgementsAlreadyImported) when any group of lines was imported before, whole or in part."""
    imported = [judge for judge in judges.values() if judge is not None and judge.kind == Judge.Kind.IMPORTED]
    if not imported:
        return
    earlier = _earlier_runs(imported)
    claimed: set[int] = set()
    found: list[tuple[tuple[int, int], str]] = []
    for key, entries in by_run.items():
        judge = judges.get(key[0])
        runs = earlier.get(judge.pk, []) if judge is not None else []
        if not runs:
            continue
        held, holders = _unnamed_lines(entries, runs) if key[1] is None else _named_run(entries, runs, claimed)
        if held:
            found.append((entries[0].line.at, _message(key, entries, held, holders)))
    if found:
        messages = [message for _, message in sorted(found)]
        raise JudgementsAlreadyImported(messages, len(messages))
