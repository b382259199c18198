"""What the curation page lists: each sample's worst label per annotator, its gold label, whether that is stale.

Reads only. The whole list is worked out from small columns (the worst labels
from ``rounds.sample_disagreements``, gold categories, stale marks, batch and
sample positions) so that its order and its counts cover every sample; only the
page shown loads its samples' rows, and then only the columns the table prints
(never the embeddings, sentences or metadata). At 3,000 samples the page was
1.2 MB of HTML and 25-35 MB of rows per request before it was paged. The whole
list is kept as a figure set of the current data version
(``results_cache.current_figures``): another page, or the same page again,
reads it back instead of working it out again, and any span, submission,
re-opening or gold label written meanwhile changes the version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.template.defaultfilters import pluralize

from annotate.models import Assignment, GoldLabel, Project, Sample
from annotate.services import freeze, results_cache, rounds
from annotate.taxonomy import CATEGORY_NAMES
from judging.quotes import Mark, text_parts

ROWS_PER_PAGE = 100


@dataclass
class CurationList:
    """One page of the curation list, with the counts of the whole list."""

    page: Page
    rows: list[dict[str, Any]]  # the page's rows: sample, labels, disputed, gold, stale
    total: int  # samples with submitted work in the round
    disputed: int
    agreed_open: int  # agreed by two or more annotators and without a gold label: what "Accept agreed" takes
    stale_count: int  # stale gold labels of the project, every round
    # Samples of batches whose round is re-opened for someone, by who (rounds.reopened_rounds): not offered as
    # agreed until that round is submitted again. [(usernames, samples)], in username order.
    waiting: list[tuple[list[str], int]] = field(default_factory=list)

    def waiting_lines(self) -> list[str]:
        """What the page says of ``waiting``: "3 samples wait for carol's re-opened round: ..."."""
        lines = []
        for names, count in self.waiting:
            who = " and ".join(f"{name}'s" for name in names)
            rounds_word = "round" if len(names) == 1 else "rounds"
            submits = f"{names[0]} submits it" if len(names) == 1 else "they submit them"
            lines.append(
                f"{count} sample{pluralize(count)} wait{pluralize(count, 's,')} for {who} re-opened {rounds_word}: "
                f"not offered as agreed until {submits} again."
            )
        return lines


def _sort_key(row: dict[str, Any]) -> tuple[Any, ...]:
    # Stale gold labels first: they were built from work that has changed since.
    return (row["stale"] is None, not row["disputed"], row["gold"] is not None, row["position"])


def _needs_gold(row: dict[str, Any]) -> bool:
    """A disputed sample without a gold label, or one whose gold label is stale."""
    return row["stale"] is not None or (row["disputed"] and row["gold"] is None)


def next_needing_gold(project: Project, round: int, after: Sample) -> int | None:
    """The id of the sample that follows ``after`` in the curation list of ``round`` and waits for a gold label
    (disputed without one, or a stale one), from the list's start again past its end; None when no other sample
    waits. Asked before ``after``'s gold label is saved: the list's order is the one the curator saw."""
    rows = _kept_rows(project, round)["rows"]
    here = next((at for at, row in enumerate(rows) if row["sample_id"] == after.pk), -1)
    for row in rows[here + 1 :] + rows[: max(here, 0)]:
        if _needs_gold(row) and row["sample_id"] != after.pk:
            return int(row["sample_id"])
    return None


def marked_summary(summary: str, spans: Iterable[Any]) -> list[dict[str, Any]]:
    """The summary cut where the numbered ``spans`` (1, 2, … in the order given, as the adjudication table numbers
    them) begin and end: ``[{"text", "numbers": [the spans covering it], "starting": [the spans starting there],
    "title": who marked it as what}]``. Joined, the pieces' texts are the summary exactly."""
    numbered = {str(number): span for number, span in enumerate(spans, start=1)}
    marks = [Mark(span.start, span.end, number) for number, span in numbered.items()]
    pieces = []
    started: set[str] = set()
    for part in text_parts(summary, None, marks):
        for piece in part["pieces"]:
            numbers = piece["marks"]
            starting = [number for number in numbers if number not in started]
            started.update(starting)
            title = " · ".join(
                f"{number}: {numbered[number].annotator.username}, {', '.join(numbered[number].labels) or 'no label'}"
                for number in numbers
            )
            pieces.append({"text": piece["text"], "numbers": numbers, "starting": starting, "title": title})
    return pieces


def curation_figures(project: Project, round: int) -> dict[str, Any]:
    """``{"rows": every row of the curation list of round, "stale_count": the project's stale gold labels}``: the
    figure set kept per data version (JSON values: a row's ``position`` reads back as a list)."""
    rows, stale = _rows(project, round)
    return {"rows": rows, "stale_count": len(stale)}


def _kept_rows(project: Project, round: int) -> dict[str, Any]:
    return results_cache.current_figures(project, "curation", round=round)


def _rows(project: Project, round: int) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """Every row of the curation list of ``round``, in its order, without the samples' rows; and the project's stale
    gold labels (every round), by sample."""
    labels = rounds.sample_disagreements(project, round)
    gold = dict(GoldLabel.objects.filter(sample__project=project).values_list("sample_id", "category"))
    stale = freeze.stale_gold_samples(project)
    submitted = Assignment.objects.filter(batch__project=project, round=round, status=Assignment.Status.SUBMITTED)
    reopened = rounds.reopened_rounds(project, round)
    positions: dict[int, tuple[int, int]] = {}
    batch_of: dict[int, int] = {}
    for pk, batch_id, batch_position, position in (
        Sample.objects.filter(batch_id__in=submitted.values("batch_id"))
        .order_by()
        .values_list("id", "batch_id", "batch__position", "position")
    ):
        positions[pk], batch_of[pk] = (batch_position, position), batch_id
    rows = [
        {"sample_id": pk, "labels": {n: CATEGORY_NAMES.get(c, c) for n, c in sorted(per.items())},
         "disputed": len(set(per.values())) > 1, "gold": CATEGORY_NAMES.get(gold[pk]) if pk in gold else None,
         "stale": stale.get(pk), "position": positions.get(pk, (0, 0)), "waiting": reopened.get(batch_of.get(pk))}
        for pk, per in labels.items()
    ]
    rows.sort(key=_sort_key)
    return rows, stale


def curation_list(project: Project, round: int, page_number: Any = 1) -> CurationList:
    """The curation list of ``round``, page ``page_number`` (anything Paginator.get_page takes; bad ones give page 1
    or the last page)."""
    kept = _kept_rows(project, round)
    rows = kept["rows"]
    # What accept_agreed_samples takes: a batch waiting for a re-opened round offers nothing.
    agreed_open = sum(1 for row in rows if not row["disputed"] and row["gold"] is None and len(row["labels"]) >= 2
                      and not row["waiting"])
    waiting: dict[tuple[str, ...], int] = {}
    for row in rows:
        if row["waiting"]:
            waiting[tuple(row["waiting"])] = waiting.get(tuple(row["waiting"]), 0) + 1
    page = Paginator(rows, ROWS_PER_PAGE).get_page(page_number)
    samples = (
        Sample.objects.select_related("batch")
        .only("external_id", "generator", "batch", "batch__name")
        .in_bulk([row["sample_id"] for row in page])
    )
    return CurationList(
        page=page,
        # A sample deleted since the list was read is left off its page.
        rows=[{**row, "sample": samples[row["sample_id"]]} for row in page if row["sample_id"] in samples],
        total=len(rows),
        disputed=sum(1 for row in rows if row["disputed"]),
        agreed_open=agreed_open,
        stale_count=kept["stale_count"],
        waiting=[(list(names), count) for names, count in sorted(waiting.items())],
    )
