"""FaithBench's second round (reconciliation) and the curation of gold labels."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any, Literal

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotate.models import Assignment, Batch, GoldLabel, Project, Sample, SpanAnnotation
from annotate.taxonomy import CATEGORY_NAMES, category_of, label_categories, worst_category

RECONCILIATION_ROUND = 2
# Sample ids per IN list when reading spans: well under SQLite's oldest limit of 999 variables a query.
SAMPLES_PER_QUERY = 500


class RoundError(ValueError):
    pass


# What a curator's form says it showed: no gold label, or the gold label saved at that moment (its decided_at).
NO_GOLD = "none"
GoldSeen = datetime | Literal["none"]


class GoldConflict(RoundError):
    """The sample's gold label changed after the curator's form showed it; ``current`` is it now (None: removed).

    ``str()`` is the curation page's message, which speaks of the form; ``api_message`` says the same to an API
    caller, who has no form: what changed, that nothing was saved, and how to write again."""

    def __init__(self, message: str, current: GoldLabel | None, *, api_message: str | None = None) -> None:
        super().__init__(message)
        self.current = current
        self.api_message = api_message or message


def reconciliation_ready(batch: Batch) -> tuple[bool, str]:
    """Whether round 2 can open: every round-1 annotator submitted, and round 2 is not open yet."""
    assignments = batch.assignments.filter(round__in=(1, RECONCILIATION_ROUND)).select_related("annotator")
    return reconciliation_state(assignments)


def reconciliation_state(assignments: Iterable[Assignment]) -> tuple[bool, str]:
    """``reconciliation_ready`` from one batch's assignments as already loaded (their annotators with them).

    The project page holds every assignment of the project; asking per batch would cost
    three queries a batch.
    """
    rows = list(assignments)
    if any(a.round == RECONCILIATION_ROUND for a in rows):
        return False, "round 2 is already open"
    first = [a for a in rows if a.round == 1]
    if len(first) < 2:
        return False, "reconciliation needs at least two round-1 annotators"
    waiting = [a.annotator.username for a in first if a.status != Assignment.Status.SUBMITTED]
    if waiting:
        return False, f"waiting for round 1 from {', '.join(sorted(waiting))}"
    return True, ""


@transaction.atomic
def open_reconciliation_round(batch: Batch, *, reveal_names: bool = True) -> list[Assignment]:
    """Copy each annotator's round-1 spans into round 2, where they stay editable beside the others'.

    The batch row, then its round-1 assignment rows, are locked first (freeze's lock order): a span write, done mark
    or re-opening of round 1 in flight holds its annotator's row, so the round opens after it, from the spans and
    states it left, and the readiness check below reads them as they are then.
    """
    batch = Batch.objects.select_for_update().get(pk=batch.pk)
    list(
        Assignment.objects.select_for_update().filter(batch=batch, round=1).order_by("pk").values_list("pk", flat=True)
    )
    ready, why = reconciliation_ready(batch)
    if not ready:
        raise RoundError(f"batch {batch.name!r}: {why}")
    batch.reveal_names = reveal_names
    batch.save(update_fields=["reveal_names"])
    annotators = [a.annotator for a in batch.assignments.filter(round=1).select_related("annotator")]
    assignments = Assignment.objects.bulk_create(
        [Assignment(batch=batch, annotator=user, round=RECONCILIATION_ROUND) for user in annotators]
    )
    originals = SpanAnnotation.objects.filter(sample__batch=batch, round=1, annotator__in=annotators)
    SpanAnnotation.objects.bulk_create(
        [
            SpanAnnotation(
                sample_id=span.sample_id, annotator_id=span.annotator_id, round=RECONCILIATION_ROUND,
                start=span.start, end=span.end, text=span.text, labels=span.labels, note=span.note,
                source_start=span.source_start, source_end=span.source_end, source_text=span.source_text,
                external_id=span.external_id, imported_fields=span.imported_fields, origin=span,
            )
            for span in originals
        ],
        batch_size=1000,
    )
    return assignments


def display_names(batch: Batch, user_ids: Iterable[int], usernames: dict[int, str]) -> dict[int, str]:
    """Names shown to other annotators in round 2: usernames, or the project's pseudonyms (as in exports)."""
    from annotate.services.pseudonyms import pseudonyms_for

    ordered = sorted(set(user_ids))
    if batch.reveal_names:
        return {pk: usernames.get(pk, str(pk)) for pk in ordered}
    labels = pseudonyms_for(batch.project, ordered)
    return {pk: labels[pk] for pk in ordered if pk in labels}


def _overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["start"] < b["end"] and b["start"] < a["end"]


def sample_roster(sample: Sample, round: int) -> dict[int, str]:
    """{annotator id: username} of the sample's batch's submitters in the round: the figures' roster
    (``_submitted_roster``, as agreement, results and "Accept agreed" read it)."""
    return _submitted_roster(sample.project, round, sample.batch).get(sample.batch_id, {})


def submitted_spans(sample: Sample, round: int, roster: dict[int, str] | None = None) -> QuerySet[SpanAnnotation]:
    """The round's spans of a sample that count: those of the batch's submitters in that round (``roster``, when
    the caller has read ``sample_roster`` already).

    Someone unassigned, whose round was reassigned to another annotator, or who has not submitted keeps their
    spans stored (exports list them), but round 2 and curation never show or use them.
    """
    roster = sample_roster(sample, round) if roster is None else roster
    return SpanAnnotation.objects.filter(sample=sample, round=round, annotator_id__in=list(roster))


def others_round_one(sample: Sample, viewer: AbstractBaseUser, my_spans: list[dict[str, Any]]) -> dict[str, Any]:
    """What a round-2 annotator sees of the others: their round-1 spans and where they disagree.

    Only the round-1 submitters' spans are shown (``submitted_spans``): not those of someone
    unassigned or whose round went to another annotator. A span of another annotator is
    marked ``agrees`` when one of the viewer's current spans overlaps it with the same
    category; each annotator's worst label is listed, and ``disagree`` is true when those differ.
    """
    categories = label_categories(sample.project.taxonomy)
    roster = sample_roster(sample, 1)
    round_one = list(submitted_spans(sample, 1, roster).order_by("start", "id"))
    names = display_names(sample.batch, roster, roster)
    mine = [{**span, "category": category_of(span["labels"], categories)} for span in my_spans]
    worst: dict[int, str] = dict.fromkeys(roster, "C")
    spans = []
    for span in round_one:
        category = category_of(span.labels, categories)
        worst[span.annotator_id] = worst_category((worst[span.annotator_id], category))
        if span.annotator_id == viewer.pk:
            continue
        record = {
            "annotator": names.get(span.annotator_id, "?"), "start": span.start, "end": span.end, "text": span.text,
            "labels": span.labels, "note": span.note, "source_start": span.source_start,
            "source_end": span.source_end, "source_text": span.source_text,
        }
        record["agrees"] = any(_overlaps(record, m) and m["category"] == category for m in mine)
        spans.append(record)
    labels = {names[pk]: CATEGORY_NAMES[c] for pk, c in worst.items()}
    # Which of the names is the viewer's own: under pseudonyms nothing else tells them their letter.
    return {"spans": spans, "worst_labels": labels, "disagree": len(set(worst.values())) > 1,
            "you": names.get(viewer.pk)}


# The span fields a gold label copies, in the order ``_gold_span_values`` takes them.
GOLD_SPAN_FIELDS = ("pk", "start", "end", "text", "labels", "note", "source_start", "source_end")


def _gold_span_values(
    pk: int, start: int, end: int, text: str, labels: list[str], note: str, source_start: int | None,
    source_end: int | None,
) -> dict[str, Any]:
    return {
        "start": start, "end": end, "text": text, "labels": labels, "note": note,
        "source_start": source_start, "source_end": source_end, "from_span": pk,
    }


def _gold_span(span: SpanAnnotation) -> dict[str, Any]:
    return _gold_span_values(*(getattr(span, name) for name in GOLD_SPAN_FIELDS))


@transaction.atomic
def gold_stamp(gold: GoldLabel | None) -> str:
    """What a curator's form carries about the gold label it shows: ``NO_GOLD``, or when that label was saved."""
    return NO_GOLD if gold is None else gold.decided_at.isoformat()


def read_gold_stamp(raw: str) -> GoldSeen:
    """A form's ``gold_stamp`` back; RoundError naming the field when it is neither ``none`` nor a time."""
    if raw.strip() == NO_GOLD:
        return NO_GOLD
    try:
        seen = datetime.fromisoformat(raw.strip())
    except ValueError:
        raise RoundError(f"base_decided_at: {raw!r} is neither 'none' nor a time; reload the page") from None
    return seen if timezone.is_aware(seen) else timezone.make_aware(seen)


@transaction.atomic
def adjudicate_sample(
    sample: Sample, curator: AbstractBaseUser, *, span_ids: Iterable[int], round: int = 1,
    seen: GoldSeen | None = None,
) -> GoldLabel:
    """The gold label of a sample, from the annotators' spans a curator chose (none = consistent).

    ``seen`` is the gold label the curator's form showed (``NO_GOLD``, or its
    ``decided_at``): when another curator saved one since, GoldConflict, and
    nothing is saved, rather than overwriting their work unseen. None skips the
    check (scripts). The sample's row is locked first, so two curators saving
    the same sample at once are checked one after the other.
    """
    Sample.objects.select_for_update().filter(pk=sample.pk).exists()
    if seen is not None:
        _check_gold_seen(sample, seen)
    chosen_ids = [int(pk) for pk in span_ids]
    # Only the spans the adjudication page lists: those of the round's submitters (submitted_spans).
    chosen = list(submitted_spans(sample, round).filter(pk__in=chosen_ids).order_by("start", "id"))
    missing = set(chosen_ids) - {span.pk for span in chosen}
    if missing:
        stored = SpanAnnotation.objects.filter(sample=sample, round=round, pk__in=missing)
        kept_out = set(stored.values_list("pk", flat=True))
        if missing - kept_out:
            raise RoundError(f"spans: {sorted(missing - kept_out)} are not round-{round} spans of this sample")
        raise RoundError(
            f"spans: {sorted(kept_out)} are round-{round} spans of this sample by someone who has not submitted that "
            "round (unassigned, reassigned or still at work): their work counts in no curation"
        )
    categories = label_categories(sample.project.taxonomy)
    category = worst_category(category_of(span.labels, categories) for span in chosen)
    gold, _ = GoldLabel.objects.update_or_create(
        sample=sample,
        defaults={"round": round, "category": category, "spans": [_gold_span(s) for s in chosen],
                  "method": GoldLabel.Method.MANUAL, "decided_by": curator},
    )
    return gold


def _check_gold_seen(sample: Sample, seen: GoldSeen) -> None:
    """GoldConflict when the sample's gold label is not the one the curator's form showed."""
    current = GoldLabel.objects.filter(sample=sample).select_related("decided_by").first()
    if isinstance(seen, datetime):
        unchanged = current is not None and current.decided_at == seen
        saw = f"the gold label of {timezone.localtime(seen):%Y-%m-%d %H:%M}"
    else:
        unchanged, saw = current is None, "no gold label"
    if unchanged:
        return
    name = sample.external_id or str(sample.pk)
    if current is None:
        raise GoldConflict(
            f"The gold label of sample {name} was removed while you had it open (you saw {saw}); your choice is "
            "below, not saved: check it and save again.", None,
            api_message=f"The gold label of sample {name} was removed after the one base_decided_at names (you saw "
            f"{saw}); nothing was saved. To write it, PUT again with base_decided_at null.",
        )
    done = "accepted in bulk" if current.method == GoldLabel.Method.BULK else "saved"
    who = f" by {current.decided_by.get_username()}" if current.decided_by else ""
    label = CATEGORY_NAMES.get(current.category, current.category)
    changed = f"The gold label of sample {name} was {done}{who} at " \
              f"{timezone.localtime(current.decided_at):%Y-%m-%d %H:%M}"
    raise GoldConflict(
        f"{changed} while you had it open (you saw {saw}); your choice is below, not saved: compare it with the "
        f"current gold label ({label}) and save again.",
        current,
        api_message=f"{changed}, after the one base_decided_at names (you saw {saw}); nothing was saved. "
        f"'current' holds it ({label}): to replace it, PUT again with its decided_at as base_decided_at.",
    )


def _submitted_roster(project: Project, round: int, batch: Batch | None) -> dict[int, dict[int, str]]:
    """Batch id -> {annotator id: username} of the round's submitted assignments."""
    assignments = Assignment.objects.filter(batch__project=project, round=round, status=Assignment.Status.SUBMITTED)
    if batch is not None:
        assignments = assignments.filter(batch=batch)
    roster: dict[int, dict[int, str]] = defaultdict(dict)
    for batch_id, user_id, username in assignments.values_list("batch_id", "annotator_id", "annotator__username"):
        roster[batch_id][user_id] = username
    return roster


def sample_disagreements(project: Project, round: int, batch: Batch | None = None) -> dict[int, dict[str, str]]:
    """Per sample of batches with submitted work: each submitter's worst category.

    Three queries whatever the size. The spans are read as each annotator's distinct label
    lists per sample (DISTINCT in the database), not span by span: an annotator's five
    Benign spans on one sample are one row and one JSON decode, and a label list's
    category is worked out once per distinct list.
    """
    categories = label_categories(project.taxonomy)
    roster = _submitted_roster(project, round, batch)
    if not roster:
        return {}
    batch_ids = list(roster)
    batch_of: dict[int, int] = {}
    labels: dict[int, dict[str, str]] = {}
    for pk, batch_id in Sample.objects.filter(batch_id__in=batch_ids).values_list("id", "batch_id"):
        batch_of[pk] = batch_id
        labels[pk] = dict.fromkeys(roster[batch_id].values(), "C")
    spans = (
        SpanAnnotation.objects.filter(sample__batch_id__in=batch_ids, round=round)
        .values_list("sample_id", "annotator_id", "labels")
        .distinct()
        .order_by()  # no ORDER BY: its columns would join the DISTINCT
    )
    category_by_labels: dict[tuple[str, ...], str | None] = {}
    for sample_id, user_id, span_labels in spans:
        name = roster[batch_of[sample_id]].get(user_id)
        if name is None:
            continue
        key = tuple(span_labels)
        if key not in category_by_labels:
            category_by_labels[key] = category_of(span_labels, categories)
        labels[sample_id][name] = worst_category((labels[sample_id][name], category_by_labels[key]))
    return labels


def reopened_rounds(project: Project, round: int) -> dict[int, list[str]]:
    """Batch id -> the usernames whose ``round`` of that batch an admin re-opened and who have not submitted it
    again. Their spans are out of the figures meanwhile (they are no submitters), so the others' labels alone
    would look agreed: such a batch's samples are not decided until the round is submitted again."""
    waiting: dict[int, list[str]] = defaultdict(list)
    rows = (
        Assignment.objects.filter(batch__project=project, round=round, reopened=True)
        .exclude(status=Assignment.Status.SUBMITTED)
        .order_by("annotator__username")
        .values_list("batch_id", "annotator__username")
    )
    for batch_id, username in rows:
        waiting[batch_id].append(username)
    return dict(waiting)


@transaction.atomic
def accept_agreed_samples(project: Project, curator: AbstractBaseUser, *, round: int = 1) -> int:
    """Gold labels for every sample where all (two or more) annotators gave the same worst label.

    The gold spans are the spans of the annotators who agreed (the batch's submitters, those
    whose worst labels were compared), one copy of each distinct (start, end, labels), the
    first in (start, id) order; spans with an empty label list are left out, as everywhere
    in the figures, and so is the work of anyone who has not submitted. Samples that already have a gold
    label are left alone, and so are those of a batch whose round an admin re-opened for someone
    (``reopened_rounds``): they are not decided until that round is submitted again. The spans are read as plain values, SAMPLES_PER_QUERY samples a
    query, and the labels written with bulk_create: a thousand samples take a few queries
    and no span model instances.
    """
    # One acceptance at a time per project: a second curator's click waits, then finds these samples decided.
    # NO KEY UPDATE: span writes, which hold the project row shared (FOR KEY SHARE) while they check their labels,
    # go on meanwhile.
    Project.objects.select_for_update(no_key=True).filter(pk=project.pk).exists()
    decided = set(GoldLabel.objects.filter(sample__project=project).values_list("sample_id", flat=True))
    waiting = reopened_rounds(project, round)
    held = set(Sample.objects.filter(batch_id__in=list(waiting)).values_list("id", flat=True)) if waiting else set()
    agreed = {
        pk: next(iter(set(per.values())))
        for pk, per in sample_disagreements(project, round).items()
        if len(per) >= 2 and len(set(per.values())) == 1 and pk not in decided and pk not in held
    }
    if not agreed:
        return 0
    roster = _submitted_roster(project, round, None)
    spans: dict[int, dict[tuple, dict[str, Any]]] = defaultdict(dict)
    agreed_ids = sorted(agreed)
    for at in range(0, len(agreed_ids), SAMPLES_PER_QUERY):
        rows = (
            SpanAnnotation.objects.filter(sample_id__in=agreed_ids[at : at + SAMPLES_PER_QUERY], round=round)
            .order_by("start", "id")
            .values_list("sample_id", "sample__batch_id", "annotator_id", *GOLD_SPAN_FIELDS)
        )
        for sample_id, batch_id, annotator_id, *values in rows:
            span = _gold_span_values(*values)
            if annotator_id not in roster.get(batch_id, {}) or not span["labels"]:
                continue
            spans[sample_id].setdefault((span["start"], span["end"], tuple(span["labels"])), span)
    # ignore_conflicts: a curator saving one of these samples by hand meanwhile (adjudicate_sample locks the
    # sample's row, not the project's) keeps their label; the count below leaves that sample out.
    GoldLabel.objects.bulk_create(
        [
            GoldLabel(sample_id=pk, round=round, category=category, spans=list(spans[pk].values()),
                      method=GoldLabel.Method.BULK, decided_by=curator)
            for pk, category in agreed.items()
        ],
        batch_size=1000,
        ignore_conflicts=True,
    )
    return GoldLabel.objects.filter(sample_id__in=agreed_ids, method=GoldLabel.Method.BULK).count()
