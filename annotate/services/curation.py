"""What the curation page lists: each sample's worst label per annotator, its gold label, whether that is stale.

Reads only. The whole list is worked out from small columns (the worst labels
from ``rounds.sample_disagreements``, gold categories, stale marks, batch and
sample positions) so that its order and its counts cover every sample; only the
page shown loads its samples' rows, and then only the columns the table prints
(never the embeddings, sentences or metadata). At 3,000 samples the page was
1.2 MB of HTML and 25-35 MB of rows per request before it was paged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.template.defaultfilters import pluralize

from annotate.models import Assignment, GoldLabel, Project, Sample
from annotate.services import freeze, rounds
from annotate.taxonomy import CATEGORY_NAMES

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


def curation_list(project: Project, round: int, page_number: Any = 1) -> CurationList:
    """The curation list of ``round``, page ``page_number`` (anything Paginator.get_page takes; bad ones give page 1
    or the last page)."""
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
        stale_count=len(stale),
        waiting=[(list(names), count) for names, count in sorted(waiting.items())],
    )
