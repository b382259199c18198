"""The sample browser of one batch: every sample with each annotator's progress, its worst label and its flags.

Reads only, in a fixed number of queries whatever the batch's size (a batch
holds 50 to 500 samples): the samples, the batch's assignments, the round's
reviews, its span counts, the flags, and the worst labels from
``rounds.sample_disagreements``. The filters, their counts and the medians
cover every sample; only one page of rows is rendered (as on the curation
page): a 500-sample batch took 0.3-0.8 s to render whole.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import Count

from annotate.models import Assignment, Batch, Sample, SampleFlag, SampleReview, SpanAnnotation
from annotate.services import progress, rounds
from annotate.taxonomy import CATEGORY_NAMES, SEVERITY, worst_category

DONE_FILTERS = {"all": "done by all", "open": "not done by someone"}
ROWS_PER_PAGE = 100


class BadQuery(ValueError):
    """A query parameter the browser cannot use; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class SampleFilters:
    generator: str = ""
    worst: str = ""  # C, B, Q or U; "" for any
    done: str = ""  # a key of DONE_FILTERS; "" for any
    flagged: bool = False  # only samples with an open flag

    @property
    def active(self) -> bool:
        return bool(self.generator or self.worst or self.done or self.flagged)


def parse_round(raw: str | None) -> int:
    raw = (raw or "1").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise BadQuery("round", f"{raw!r} is not a round number (1, 2, ...)")
    return int(raw)


def parse_filters(query: Mapping[str, str]) -> SampleFilters:
    worst = (query.get("worst") or "").strip().upper()
    if worst and worst not in SEVERITY:
        raise BadQuery("worst", f"{worst!r} is not a worst label; choose C, B, Q or U")
    done = (query.get("done") or "").strip()
    if done and done not in DONE_FILTERS:
        raise BadQuery("done", f"{done!r} is not a done filter; choose {' or '.join(DONE_FILTERS)}")
    flagged = (query.get("flagged") or "").strip()
    if flagged not in ("", "0", "1", "on"):
        raise BadQuery("flagged", f"{flagged!r}: use 1 for flagged samples only")
    return SampleFilters(
        generator=(query.get("generator") or "").strip(), worst=worst, done=done, flagged=flagged in ("1", "on")
    )


def sample_at(batch: Batch, raw: str) -> int:
    """The id of the batch's Nth sample (1-based, in the batch's order)."""
    raw = (raw or "").strip()
    total = Sample.objects.filter(batch=batch).count()
    if not raw.isdigit() or not 1 <= int(raw) <= total:
        span = f"1 to {total}" if total else "none: the batch is empty"
        raise BadQuery("jump", f"no sample {raw!r} in batch {batch.name!r} (samples: {span})")
    return Sample.objects.filter(batch=batch).order_by("position", "id").values_list("id", flat=True)[int(raw) - 1]


@dataclass
class AnnotatorCell:
    done: bool
    spans: int
    seconds: int | None  # None unless the viewer is an admin, or when no time was recorded (imported work)


@dataclass
class Annotator:
    user_id: int
    username: str
    submitted: bool
    median_seconds: float | None = None  # over their done samples with time recorded; admins only


@dataclass
class SampleRow:
    number: int  # 1-based place in the batch
    sample_id: int
    external_id: str
    generator: str
    cells: list[AnnotatorCell]
    worst: str | None  # worst label over the batch's submitters; None before anyone submitted
    flags: list[SampleFlag] = field(default_factory=list)

    @property
    def worst_name(self) -> str | None:
        return CATEGORY_NAMES[self.worst] if self.worst else None

    @property
    def done_by_all(self) -> bool:
        return bool(self.cells) and all(cell.done for cell in self.cells)

    @property
    def open_flags(self) -> list[SampleFlag]:
        return [flag for flag in self.flags if flag.resolved_at is None]


@dataclass
class BatchSamples:
    batch: Batch
    round: int
    rounds: list[int]
    annotators: list[Annotator]
    pager: Page  # the page shown, of the rows after the filters
    rows: list[SampleRow]  # the page's rows
    matched: int  # rows after the filters, every page
    total: int  # samples in the batch
    generators: list[str]
    submitters: int
    with_seconds: bool


def _keep(row: SampleRow, filters: SampleFilters) -> bool:
    if filters.generator and row.generator != filters.generator:
        return False
    if filters.worst and row.worst != filters.worst:
        return False
    if filters.done == "all" and not row.done_by_all:
        return False
    if filters.done == "open" and not any(not cell.done for cell in row.cells):
        return False
    return not (filters.flagged and not row.open_flags)


def batch_samples(
    batch: Batch, round: int, filters: SampleFilters, *, with_seconds: bool, page_number: Any = 1
) -> BatchSamples:
    """The batch's samples in order, filtered, page ``page_number`` of them (anything Paginator.get_page takes: a
    bad one gives page 1, one past the end the last page); seconds spent only ``with_seconds`` (admins)."""
    assignments = list(
        Assignment.objects.filter(batch=batch).order_by("round", "annotator__username").values_list(
            "round", "annotator_id", "annotator__username", "status"
        )
    )
    known_rounds = sorted({row[0] for row in assignments}) or [1]
    if round not in known_rounds:
        raise BadQuery("round", f"batch {batch.name!r} has no round {round} (rounds: "
                                f"{', '.join(map(str, known_rounds))})")
    annotators = [
        Annotator(user_id, username, status == Assignment.Status.SUBMITTED)
        for round_, user_id, username, status in assignments
        if round_ == round
    ]
    samples = list(
        Sample.objects.filter(batch=batch).order_by("position", "id").values_list("id", "external_id", "generator")
    )
    reviews = {
        (sample_id, user_id): (done, seconds)
        for sample_id, user_id, done, seconds in SampleReview.objects.filter(sample__batch=batch, round=round)
        .order_by().values_list("sample_id", "annotator_id", "done", "seconds_spent")
    }
    span_counts = {
        (row["sample_id"], row["annotator_id"]): row["spans"]
        for row in SpanAnnotation.objects.filter(sample__batch=batch, round=round)
        .values("sample_id", "annotator_id").annotate(spans=Count("id")).order_by()
    }
    flags: dict[int, list[SampleFlag]] = defaultdict(list)
    for flag in SampleFlag.objects.filter(sample__batch=batch).select_related("annotator").order_by("created_at", "id"):
        flags[flag.sample_id].append(flag)
    worst_by_annotator = rounds.sample_disagreements(batch.project, round, batch)
    rows = []
    for number, (sample_id, external_id, generator) in enumerate(samples, start=1):
        cells = []
        for person in annotators:
            review = reviews.get((sample_id, person.user_id))
            done = progress.counts_as_done(review[0] if review else None, submitted=person.submitted)
            # Imported work: submitted with its spans but without reviews, so no time was recorded.
            seconds = review[1] if review else (None if done else 0)
            cells.append(AnnotatorCell(done, span_counts.get((sample_id, person.user_id), 0),
                                       seconds if with_seconds else None))
        per = worst_by_annotator.get(sample_id)
        rows.append(SampleRow(number, sample_id, external_id, generator, cells,
                              worst_category(per.values()) if per else None, flags.get(sample_id, [])))
    if with_seconds:
        for index, person in enumerate(annotators):
            times = [row.cells[index].seconds or 0 for row in rows if row.cells[index].done]
            times = [seconds for seconds in times if seconds > 0]
            person.median_seconds = statistics.median(times) if times else None
    kept = [row for row in rows if _keep(row, filters)]
    pager = Paginator(kept, ROWS_PER_PAGE).get_page(page_number)
    return BatchSamples(
        batch=batch,
        round=round,
        rounds=known_rounds,
        annotators=annotators,
        pager=pager,
        rows=list(pager),
        matched=len(kept),
        total=len(rows),
        generators=sorted({generator for _, _, generator in samples if generator}),
        submitters=sum(1 for person in annotators if person.submitted),
        with_seconds=with_seconds,
    )
