"""What the curation page lists: each sample's worst label per annotator, its gold label, whether that is stale.

Reads only. The whole list is worked out from small columns (the worst labels
from ``rounds.sample_disagreements``, gold categories, stale marks, batch and
sample positions) so that its order and its counts cover every sample; only the
page shown loads its samples' rows, and then only the columns the table prints
(never the embeddings, sentences or metadata). At 3,000 samples the page was
1.2 MB of HTML and 25-35 MB of rows per request before it was paged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator

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
    positions = {
        pk: (batch_position, position)
        for pk, batch_position, position in Sample.objects.filter(batch_id__in=submitted.values("batch_id"))
        .order_by()
        .values_list("id", "batch__position", "position")
    }
    rows = [
        {"sample_id": pk, "labels": {n: CATEGORY_NAMES.get(c, c) for n, c in sorted(per.items())},
         "disputed": len(set(per.values())) > 1, "gold": CATEGORY_NAMES.get(gold[pk]) if pk in gold else None,
         "stale": stale.get(pk), "position": positions.get(pk, (0, 0))}
        for pk, per in labels.items()
    ]
    rows.sort(key=_sort_key)
    agreed_open = sum(1 for row in rows if not row["disputed"] and row["gold"] is None and len(row["labels"]) >= 2)
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
    )
