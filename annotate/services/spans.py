"""Writing spans and sample reviews. Every save is checked against the stored version."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotate.access import AssignmentStates, span_round_not_held
from annotate.graphemes import first_split
from annotate.models import Assignment, Sample, SampleReview, SpanAnnotation
from annotate.services import freeze
from annotate.taxonomy import LabelError, normalize_labels

T = TypeVar("T")


class SpanError(ValueError):
    """Bad span input; ``problems`` holds every field at fault with its messages, ``field`` and ``message`` the first.

    Every check of a save runs before any refusal, so one answer names each bad field (reversed offsets beside an
    unknown label), not one per attempt.
    """

    def __init__(self, field: str, message: str, problems: dict[str, list[str]] | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.problems = problems or {field: [message]}

    @classmethod
    def of(cls, problems: dict[str, list[str]]) -> SpanError:
        field, messages = next(iter(problems.items()))
        return cls(field, messages[0], problems)


class StaleVersion(Exception):
    """The span changed since the client read it; ``current`` is the newer row (None if deleted)."""

    def __init__(self, current: SpanAnnotation | None) -> None:
        super().__init__("this span was changed elsewhere; reload to see the newer version")
        self.current = current


class SpanExists(Exception):
    """The annotator already has a span with these offsets and labels, but another note or source link.

    Answering with the stored span would drop the new note or link without a word; the client edits
    ``existing`` instead.
    """

    def __init__(self, existing: SpanAnnotation) -> None:
        super().__init__(
            f"span {existing.pk} already has these offsets and labels with a different note or source link; "
            f"nothing was saved: edit span {existing.pk} (PATCH it with its version) to change them"
        )
        self.existing = existing


def _check_offsets(
    text: str, start: Any, end: Any, field: str, stored: Callable[[], set[tuple[int, int]]] | None = None
) -> tuple[int, int]:
    """Code-point offsets of a range of ``text`` holding more than white space; ``field`` is "" (summary) or
    "source_"."""
    for name, value in ((f"{field}start", start), (f"{field}end", end)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise SpanError(name, f"must be a whole number, got {value!r}")
    # Reversed or empty before out of range: 5..2 inside a long text is not "outside" it.
    if start >= end:
        raise SpanError(f"{field}start", f"{field}start must be before {field}end ({start}..{end})")
    if start < 0 or end > len(text):
        raise SpanError(f"{field}start", f"{start}..{end} is outside a text of {len(text)} characters")
    if not text[start:end].strip():
        # The page trims a selection's white space; a range of spaces alone marks no words (an import keeps one).
        raise SpanError(f"{field}start", f"{start}..{end} covers only white space ({text[start:end]!r}); "
                        "a span must hold at least one character that is not white space")
    split = first_split(text, (start, end))
    if split is not None and not (stored is not None and (start, end) in stored()):
        # Half an emoji sequence, a flag or a letter without its accent is no word a reader can see; the page's
        # selection keeps whole characters (where the browser has Intl.Segmenter), so a client that sends one is
        # told, not stored. Imports keep theirs as is, and offsets a stored span of the text already has (round 2's
        # Copy of an imported span, a change that keeps them) are taken as they are.
        offset, cluster_start, cluster_end = split
        name = f"{field}start" if offset == start else f"{field}end"
        raise SpanError(name, f"{name} {offset} splits a character: code points {cluster_start}..{cluster_end} "
                        f"({text[cluster_start:cluster_end]!r}) are one character (a grapheme cluster); "
                        "a span must start and end between whole characters")
    return start, end


def _stored(sample: Sample) -> set[tuple[int, int]]:
    """The summary offsets the sample's stored spans have (any annotator, any round)."""
    return set(SpanAnnotation.objects.filter(sample=sample).values_list("start", "end"))


def _source_link(sample: Sample, source_start: Any, source_end: Any) -> tuple[int | None, int | None, str | None]:
    if source_start is None and source_end is None:
        return None, None, None
    if source_start is None or source_end is None:
        raise SpanError("source_start", "source_start and source_end must both be set or both be null")
    start, end = _check_offsets(sample.passage.text, source_start, source_end, "source_", lambda: set(
        SpanAnnotation.objects.filter(sample__passage_id=sample.passage_id, source_start__isnull=False)
        .values_list("source_start", "source_end")))
    return start, end, sample.passage.text[start:end]


def _labels(sample: Sample, labels: Any) -> list[str]:
    try:
        chosen = normalize_labels(labels, sample.project.taxonomy)
    except LabelError as error:
        raise SpanError("labels", str(error)) from None
    if not chosen:
        raise SpanError("labels", "choose at least one label")
    return chosen


def _check_open(
    sample: Sample, annotator: AbstractBaseUser, round: int, states: AssignmentStates | None = None
) -> None:
    # access.get_sample_for_user leaves the annotator's rounds on the sample, read in the query that loads it;
    # inside a write's transaction ``states`` are the rounds as they are now (freeze.lock_rounds).
    if round not in (AssignmentStates.of(sample, annotator) if states is None else states).rounds:
        raise SpanError("round", f"you are not assigned to round {round} of batch {sample.batch.name!r}")


def _labels_now(sample: Sample, labels: Any, label_set: Any) -> list[str] | None:
    """``labels`` checked again against ``label_set``, the project's as it is now (SpanError when it no longer has
    one of them), or None when it is still the one they were checked against at the request's start."""
    if label_set is None or label_set == sample.project.taxonomy:
        return None
    sample.project.taxonomy = label_set
    return _labels(sample, labels)


class _Failed:
    """The value of a check that failed (None is a value: a span with no source link)."""


FAILED = _Failed()


def _attempt(problems: dict[str, list[str]], check: Callable[[], T]) -> T | _Failed:
    """The check's value, or FAILED with its refusal added to ``problems`` (so the next check still runs)."""
    try:
        return check()
    except SpanError as error:
        for field, messages in error.problems.items():
            problems.setdefault(field, []).extend(messages)
        return FAILED


def check_new_span(
    sample: Sample,
    annotator: AbstractBaseUser,
    *,
    round: Any = None,
    start: Any = None,
    end: Any = None,
    labels: Any = None,
    note: str = "",
    source_start: Any = None,
    source_end: Any = None,
    refused: Collection[str] = (),
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A new span checked whole: its stored values, and every problem, field -> messages. Nothing is written.

    ``refused`` names fields a caller refused already (an API request's types): they are neither checked again
    nor reported twice, so one answer lists each field's problem. The frozen-round check is not here: it is a
    conflict with the round's state (409), asked once the input is right.
    """
    problems: dict[str, list[str]] = {}
    cleaned: dict[str, Any] = {}
    if "round" not in refused:
        _attempt(problems, lambda: _check_open(sample, annotator, round))
    if not {"start", "end"} & set(refused):
        offsets = _attempt(problems, lambda: _check_offsets(sample.summary, start, end, "", lambda: _stored(sample)))
        if not isinstance(offsets, _Failed):
            cleaned.update(start=offsets[0], end=offsets[1], text=sample.summary[offsets[0]:offsets[1]])
    if not {"source_start", "source_end"} & set(refused):
        link = _attempt(problems, lambda: _source_link(sample, source_start, source_end))
        if not isinstance(link, _Failed):
            cleaned.update(source_start=link[0], source_end=link[1], source_text=link[2])
    if "labels" not in refused:
        chosen = _attempt(problems, lambda: _labels(sample, labels))
        if not isinstance(chosen, _Failed):
            cleaned["labels"] = chosen
    cleaned["note"] = note or ""
    return cleaned, problems


def create_span(
    sample: Sample,
    annotator: AbstractBaseUser,
    *,
    round: int,
    start: Any,
    end: Any,
    labels: Any,
    note: str = "",
    source_start: Any = None,
    source_end: Any = None,
) -> SpanAnnotation:
    """Save a new span. Bad input raises SpanError naming every field at fault; then a frozen round RoundFrozen.

    The round's state and the labels are checked again inside the transaction, under the annotator's assignment
    locks and the project's shared lock: a round submitted, re-assigned or superseded, or a label deleted, since the
    request began is refused, not written after it.
    """
    cleaned, problems = check_new_span(
        sample, annotator, round=round, start=start, end=end, labels=labels, note=note,
        source_start=source_start, source_end=source_end,
    )
    if problems:
        raise SpanError.of(problems)
    with transaction.atomic():
        # The annotator's assignment locks also make the look for a twin and the insert one step: a double press or
        # a retry racing the first request waits here, then finds the first one's span.
        states, label_set = freeze.lock_rounds_and_label_set(sample, annotator)
        _check_open(sample, annotator, round, states)
        freeze.check_writable(sample, annotator, round, states=states)
        relabelled = _labels_now(sample, labels, label_set)
        if relabelled is not None:
            cleaned["labels"] = relabelled
        start, end, chosen, note = cleaned["start"], cleaned["end"], cleaned["labels"], cleaned["note"]
        # A repeated save of a span the annotator already has gives back that span instead of
        # storing it twice; labels are a set, so their order does not make another span. The same
        # span with another note or link is not a repeat: that is refused, never silently dropped.
        twin = next(
            (
                candidate
                for candidate in SpanAnnotation.objects.filter(
                    sample=sample, annotator=annotator, round=round, start=start, end=end
                ).select_related("annotator").order_by("pk")
                if set(candidate.labels) == set(chosen)
            ),
            None,
        )
        if twin is not None:
            if (twin.note, twin.source_start, twin.source_end) != (note, cleaned["source_start"], cleaned["source_end"]):
                raise SpanExists(twin)
            twin.duplicate = True  # type: ignore[attr-defined]
            return twin
        return SpanAnnotation.objects.create(sample=sample, annotator=annotator, round=round, **cleaned)


def _check_version(version: Any) -> int:
    if isinstance(version, bool) or not isinstance(version, int):
        raise SpanError("version", "send the version you last read")
    return version


def check_span_changes(
    span: SpanAnnotation, changes: dict[str, Any], *, version: Any = None, refused: Collection[str] = ()
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Changes to a span checked whole: the columns to write, and every problem, field -> messages.

    As check_new_span: ``refused`` fields are neither checked nor reported again, and nothing is written.
    """
    problems: dict[str, list[str]] = {}
    fields: dict[str, Any] = {}
    sample = span.sample
    if "version" not in refused:
        _attempt(problems, lambda: _check_version(version))
    if ("start" in changes or "end" in changes) and not {"start", "end"} & set(refused):
        offsets = _attempt(problems, lambda: _check_offsets(
            sample.summary, changes.get("start", span.start), changes.get("end", span.end), "", lambda: _stored(sample)
        ))
        if not isinstance(offsets, _Failed):
            fields.update(start=offsets[0], end=offsets[1], text=sample.summary[offsets[0]:offsets[1]])
    if "labels" in changes and "labels" not in refused:
        chosen = _attempt(problems, lambda: _labels(sample, changes["labels"]))
        if not isinstance(chosen, _Failed):
            fields["labels"] = chosen
    if "note" in changes and "note" not in refused:
        note = changes["note"]
        if note is not None and not isinstance(note, str):
            problems.setdefault("note", []).append("must be text")
        else:
            fields["note"] = note or ""
    if ("source_start" in changes or "source_end" in changes) and not {"source_start", "source_end"} & set(refused):
        link = _attempt(problems, lambda: _source_link(
            sample, changes.get("source_start", span.source_start), changes.get("source_end", span.source_end)
        ))
        if not isinstance(link, _Failed):
            fields.update(source_start=link[0], source_end=link[1], source_text=link[2])
    return fields, problems


def update_span(span: SpanAnnotation, *, version: Any, changes: dict[str, Any]) -> SpanAnnotation:
    """Apply changes if ``version`` is still the stored one; otherwise raise StaleVersion.

    NotAssigned first when its author no longer holds the span's round; then bad input raises SpanError naming
    every field at fault, before the frozen-round check (RoundFrozen).
    Changes to the values the span already has write nothing and keep its version.
    """
    _check_held(span)
    fields, problems = check_span_changes(span, changes, version=version)
    if problems:
        raise SpanError.of(problems)
    with transaction.atomic():
        if "labels" in fields:
            states, label_set = freeze.lock_rounds_and_label_set(span.sample, span.annotator)
        else:
            states = freeze.lock_rounds(span.sample, span.annotator)
        _check_held(span, states)
        freeze.check_writable(span.sample, span.annotator, span.round, states=states)
        if "labels" in fields:
            relabelled = _labels_now(span.sample, changes["labels"], label_set)
            if relabelled is not None:
                fields["labels"] = relabelled
        if span.version == version and _unchanged(span, fields):
            # Saving the values it has would only bump the version and turn another tab's copy stale.
            return span
        # Taken under the locks, so the time is after any write this one waited for: a gold label decided before
        # this change is seen to be older than it (freeze.stale_gold_samples).
        now = timezone.now()
        # One statement: the version check and the write cannot be split by another save.
        updated = SpanAnnotation.objects.filter(pk=span.pk, version=version).update(
            version=F("version") + 1, updated_at=now, **fields
        )
        current = None if updated else _current(span.pk)
    if not updated:
        raise StaleVersion(current)
    if span.version != version:
        # The row changed between our read and the client's; take what is stored.
        span.refresh_from_db()
        return span
    # The UPDATE matched the version we read, so the row now holds exactly these values.
    for name, value in fields.items():
        setattr(span, name, value)
    span.version = version + 1
    span.updated_at = now
    return span


def _unchanged(span: SpanAnnotation, fields: dict[str, Any]) -> bool:
    """Whether ``fields`` hold the values the span has; labels compared as a set, as twins are."""
    for name, value in fields.items():
        stored = getattr(span, name)
        if name == "labels" and set(value) != set(stored):
            return False
        if name != "labels" and value != stored:
            return False
    return True


def _check_held(span: SpanAnnotation, states: AssignmentStates | None = None) -> None:
    """Raise NotAssigned unless the span's author still holds its round of the batch: the spans of someone unassigned
    or reassigned stay as they are (access.get_span_for_user refuses the API's writes first, with 403). ``states``:
    the author's rounds as freeze.lock_rounds read them, by default those the request looked up."""
    if span.round not in (AssignmentStates.of(span.sample, span.annotator) if states is None else states).rounds:
        raise freeze.NotAssigned(span_round_not_held(span))


def delete_span(span: SpanAnnotation, *, version: Any) -> None:
    """Delete the span if ``version`` is still the stored one (else StaleVersion); NotAssigned when its author no
    longer holds its round, RoundFrozen when that round is frozen."""
    _check_held(span)
    if isinstance(version, bool) or not isinstance(version, int):
        raise SpanError("version", "send the version you last read")
    with transaction.atomic():
        states = freeze.lock_rounds(span.sample, span.annotator)
        _check_held(span, states)
        freeze.check_writable(span.sample, span.annotator, span.round, states=states)
        # Lock the row at that version, so no save lands between the check and the delete.
        current = SpanAnnotation.objects.select_for_update().filter(pk=span.pk, version=version).exists()
        if current:
            span.delete()
    if not current:
        raise StaleVersion(_current(span.pk))


def _current(pk: int) -> SpanAnnotation | None:
    return SpanAnnotation.objects.select_related("annotator").filter(pk=pk).first()


@transaction.atomic
def mark_sample_done(
    sample: Sample, annotator: AbstractBaseUser, *, round: int, done: bool, seconds: int = 0
) -> SampleReview:
    """Record the annotator's verdict; a batch whose samples are all done counts as submitted.

    In a frozen round nothing changes: marking a done sample done again is answered
    with the stored review (``D`` moves on), anything else raises RoundFrozen. A
    re-opened round is never submitted here, only by ``freeze.submit_round_again``.
    """
    if not isinstance(done, bool):  # "yes", 1 or "false" are not read as a verdict: a typo must not mark work done
        raise SpanError("done", f"done must be true or false, not {done!r}")
    states = _lock_open(sample, annotator, round)
    try:
        freeze.check_writable(sample, annotator, round, states=states)
    except freeze.RoundFrozen:
        review = SampleReview.objects.filter(sample=sample, annotator=annotator, round=round, done=True).first()
        if done and review is not None:
            return review
        raise
    review, _ = SampleReview.objects.get_or_create(sample=sample, annotator=annotator, round=round)
    review.done = done
    # Added in the database: the time of a visit sent on leaving the page (add_time_spent) may land at once.
    review.seconds_spent = F("seconds_spent") + max(0, int(seconds))
    review.save()
    review.refresh_from_db(fields=["seconds_spent"])
    refresh_assignment(sample.batch_id, annotator, round)
    return review


@transaction.atomic
def add_time_spent(sample: Sample, annotator: AbstractBaseUser, *, round: int, seconds: int) -> SampleReview:
    """Add the time of one visit to the sample (the page sends it when the annotator leaves the sample by any way
    but ``D``) to their review; its done mark and everything else stay as they are.

    In a frozen round nothing is stored and RoundFrozen is raised: a submitted round's times are final, and a
    review row added there would turn an imported sample (submitted without reviews, so counted done) into one
    marked not done.
    """
    states = _lock_open(sample, annotator, round)
    freeze.check_writable(sample, annotator, round, states=states)
    review, _ = SampleReview.objects.get_or_create(sample=sample, annotator=annotator, round=round)
    added = max(0, int(seconds))
    if added:
        SampleReview.objects.filter(pk=review.pk).update(seconds_spent=F("seconds_spent") + added,
                                                         updated_at=timezone.now())
        review.refresh_from_db(fields=["seconds_spent", "updated_at"])
    return review


def _lock_open(sample: Sample, annotator: AbstractBaseUser, round: int) -> AssignmentStates:
    """The annotator's rounds of the batch, locked (freeze.lock_rounds), once they are checked to still hold
    ``round``: NotAssigned when they hold no round of the batch any more (unassigned or removed while the request was
    on its way: the API's 404, as for a sample of a batch one does not annotate), SpanError on ``round`` when they
    hold others."""
    states = freeze.lock_rounds(sample, annotator)
    if not states.rounds:
        raise freeze.NotAssigned(f"you are not assigned to batch {sample.batch.name!r} any more; nothing was saved")
    _check_open(sample, annotator, round, states)
    return states


def refresh_assignment(batch_id: int, annotator: AbstractBaseUser, round: int) -> Assignment:
    """Submit the round (it freezes) when its last sample is marked done.

    A re-opened round is left open: its samples are mostly done already, so the first ``D`` after
    one fix would freeze it again. The annotator submits it again with Submit again.
    NotAssigned when the annotator no longer holds the round (callers lock it first: ``_lock_open``).
    """
    assignment = Assignment.objects.select_for_update().filter(batch_id=batch_id, annotator=annotator, round=round).first()
    if assignment is None:
        raise freeze.NotAssigned(f"you are not assigned to round {round} of this batch any more; nothing was saved")
    if assignment.reopened:
        return assignment
    total = Sample.objects.filter(batch_id=batch_id).count()
    finished = SampleReview.objects.filter(
        sample__batch_id=batch_id, annotator=annotator, round=round, done=True
    ).count()
    submitted = total > 0 and finished >= total
    if submitted and assignment.status != Assignment.Status.SUBMITTED:
        assignment.status, assignment.submitted_at = Assignment.Status.SUBMITTED, timezone.now()
        assignment.save(update_fields=["status", "submitted_at"])
    elif not submitted and assignment.status == Assignment.Status.SUBMITTED:
        assignment.status, assignment.submitted_at = Assignment.Status.ASSIGNED, None
        assignment.save(update_fields=["status", "submitted_at"])
    return assignment
