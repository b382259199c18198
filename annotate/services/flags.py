"""Sample flags: an annotator reports a sample as broken or to be skipped; an admin resolves the report.

One flag per annotator, sample and round: flagging again changes it (and
re-opens it if an admin had resolved it). A flag is a report about the
sample, not annotation work, so it may be raised in a round the annotator has
already submitted.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from annotate.access import AssignmentStates
from annotate.models import Assignment, Project, Sample, SampleFlag

MAX_COMMENT = 2000
# The flags page lists each of its two lists a page at a time, as the sample browser lists samples.
FLAGS_PER_PAGE = 100


class FlagError(ValueError):
    """Bad flag input; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NotFlagger(FlagError):
    """The user is not an annotator of the sample's batch in that round."""


class NoFlag(FlagError):
    """There is no flag of this annotator on the sample in that round."""


def check_batch_flagger(sample: Sample, user: AbstractBaseUser) -> None:
    """Refuse (``NotFlagger``) a user who annotates the sample's batch in no round, before any input is read.

    Asked first so that a caller who may not flag learns that whatever they send, not what their body lacks;
    the round they name is checked afterwards (``_check_flagger``). The access lookup's assignments, left on
    the sample for an annotator, spare a query.
    """
    if not AssignmentStates.of(sample, user).rounds:
        raise NotFlagger("round", f"only the annotators of batch {sample.batch.name!r} flag its samples")


def _check_flagger(sample: Sample, annotator: AbstractBaseUser, round: Any) -> int:
    if isinstance(round, bool) or not isinstance(round, int) or round < 1:
        raise FlagError("round", f"{round!r} is not a round number (1, 2, ...)")
    if not Assignment.objects.filter(batch_id=sample.batch_id, annotator=annotator, round=round).exists():
        raise NotFlagger(
            "round", f"only the annotators of round {round} of batch {sample.batch.name!r} flag its samples"
        )
    return round


@transaction.atomic
def flag_sample(
    sample: Sample, annotator: AbstractBaseUser, *, round: int, kind: str, comment: str = ""
) -> tuple[SampleFlag, bool]:
    """Raise or change the annotator's flag on the sample in the round; returns the flag and whether it is new."""
    round = _check_flagger(sample, annotator, round)
    if kind not in SampleFlag.Kind.values:
        raise FlagError("kind", f"{kind!r} is not one of {', '.join(SampleFlag.Kind.values)}")
    if comment is None:
        comment = ""
    if not isinstance(comment, str):
        raise FlagError("comment", "must be text")
    comment = comment.strip()
    if len(comment) > MAX_COMMENT:
        raise FlagError("comment", f"is {len(comment)} characters long; at most {MAX_COMMENT}")
    flag, created = SampleFlag.objects.select_for_update().get_or_create(
        sample=sample, annotator=annotator, round=round, defaults={"kind": kind, "comment": comment}
    )
    if not created:
        flag.kind, flag.comment = kind, comment
        flag.resolved_at, flag.resolved_by = None, None  # a changed report needs a fresh look
        flag.save(update_fields=["kind", "comment", "resolved_at", "resolved_by"])
    return flag, created


def withdraw_flag(sample: Sample, annotator: AbstractBaseUser, *, round: int) -> None:
    round = _check_flagger(sample, annotator, round)
    deleted, _ = SampleFlag.objects.filter(sample=sample, annotator=annotator, round=round).delete()
    if not deleted:
        raise NoFlag("round", f"you have not flagged this sample in round {round}")


def own_flag(sample: Sample, annotator: AbstractBaseUser, *, round: int) -> SampleFlag | None:
    round = _check_flagger(sample, annotator, round)
    return SampleFlag.objects.filter(sample=sample, annotator=annotator, round=round).first()


def resolve_flag(flag: SampleFlag, admin: AbstractBaseUser) -> SampleFlag:
    """Mark the flag dealt with; resolving a resolved flag keeps the first resolution."""
    if flag.resolved_at is None:
        flag.resolved_at, flag.resolved_by = timezone.now(), admin
        flag.save(update_fields=["resolved_at", "resolved_by"])
    return flag


def project_flags(project: Project, open_page: Any = 1, resolved_page: Any = 1) -> tuple[Page, Page]:
    """A page of the project's open flags (oldest first) and one of its resolved ones (latest resolution first),
    each numbered apart (anything Paginator.get_page takes: a bad number gives page 1, one past the end the last
    page); each page's paginator counts every flag of its list."""
    flags: QuerySet[SampleFlag] = SampleFlag.objects.filter(sample__project=project).select_related(
        "sample__batch", "annotator", "resolved_by"
    ).defer("sample__metadata", "sample__embeddings", "sample__sentences", "sample__imported_fields")
    open_flags = flags.filter(resolved_at__isnull=True).order_by("created_at", "id")
    resolved = flags.filter(resolved_at__isnull=False).order_by("-resolved_at", "-id")
    return (Paginator(open_flags, FLAGS_PER_PAGE).get_page(open_page),
            Paginator(resolved, FLAGS_PER_PAGE).get_page(resolved_page))
