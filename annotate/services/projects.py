"""Projects, members and batch assignments."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.paginator import Page, Paginator
from django.db import transaction
from django.db.models import Count, Q, QuerySet
from django.template.defaultfilters import pluralize
from django.utils.text import slugify

from annotate.models import Assignment, Batch, Membership, PairConfig, Project, Sample, SampleReview
from annotate.services import progress


class ProjectError(ValueError):
    pass


# The home page lists an annotator's assignments a page at a time, as the sample browser lists samples.
ASSIGNMENTS_PER_PAGE = 100
# Lowercase words of letters and digits joined by single hyphens: "pilot-study-2".
SLUG_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
SLUG_RULE = "lowercase letters and digits, in words joined by single hyphens (e.g. pilot-study-2)"


def _limit(field: str) -> int:
    return Project._meta.get_field(field).max_length


def check_project_slug(slug: str) -> str:
    """A slug as typed: checked, never silently changed."""
    if len(slug) > _limit("slug"):
        raise ProjectError(f"slug: at most {_limit('slug')} characters (this one has {len(slug)})")
    if not SLUG_PATTERN.fullmatch(slug):
        raise ProjectError(f"slug: {slug!r} is not a valid slug; use {SLUG_RULE}")
    return slug


def slug_from_name(name: str) -> str:
    """The slug a name suggests: slugify's, with underscores as hyphens, cut to the field's length."""
    slug = re.sub(r"[-_]+", "-", slugify(name)).strip("-")
    return slug[: _limit("slug")].rstrip("-")


def check_project_kind(kind: str) -> str:
    """A kind as chosen: one of Project.Kind's values, or an error listing them (the database would not check)."""
    if kind not in Project.Kind.values:
        choices = ", ".join(f"{value} ({label.lower()})" for value, label in Project.Kind.choices)
        raise ProjectError(f"kind: {kind!r} is not a project kind; choose one of {choices}")
    return kind


@transaction.atomic
def create_project(
    name: str,
    *,
    slug: str | None = None,
    owner: AbstractBaseUser | None = None,
    annotators_per_batch: int = 2,
    kind: str = Project.Kind.SPANS,
) -> Project:
    """A new project with ``owner`` as its admin; a pairs project also gets its settings row (PairConfig).

    Every way of making a project (the new-project page, import_faithbench, import_pairs with a new slug) comes
    here, so a pairs project made in the browser is set up exactly as one made by the import command.
    """
    kind = check_project_kind(kind)
    # Checked here, not by the database: SQLite stores an over-long name, PostgreSQL fails on it.
    name = name.strip()
    if not name:
        raise ProjectError("name: give the project a name")
    if len(name) > _limit("name"):
        raise ProjectError(f"name: at most {_limit('name')} characters (this one has {len(name)})")
    if slug:
        slug = check_project_slug(slug.strip())
    else:
        slug = slug_from_name(name)
        if not slug:
            raise ProjectError(f"slug: the name has no letters or digits to make a slug of; choose one: {SLUG_RULE}")
    if Project.objects.filter(slug=slug).exists():
        raise ProjectError(f"slug: a project {slug!r} already exists")
    project = Project.objects.create(name=name, slug=slug, kind=kind, annotators_per_batch=annotators_per_batch)
    if owner is not None:
        Membership.objects.create(project=project, user=owner, role=Membership.Role.ADMIN)
    if kind == Project.Kind.PAIRS:
        # Judges per item, spammer thresholds, perturbation parameters: the defaults, editable on the project page.
        PairConfig.objects.create(project=project)
    return project


def update_project_settings(project: Project, *, reveal_generator: bool) -> Project:
    project.reveal_generator = reveal_generator
    project.save(update_fields=["reveal_generator"])
    return project


def results_of_other_projects(projects: Iterable[Project]) -> list[Any]:
    """Rows of other projects made with these projects' prompt versions (which PROTECT them): what would keep
    ``delete_project`` from deleting them. None unless put there by hand: the app uses a project's own prompts."""
    from judging.models import Judgement, JudgeRun, SyntheticRewrite, SyntheticSet  # judging builds on annotate

    ids = [project.pk for project in projects]
    # (model, its field that points at a prompt version, the path to the project the row belongs to)
    protecting = (
        (JudgeRun, "rubric", "project"),
        (Judgement, "prompt_version", "run__project"),
        (SyntheticSet, "intrinsic_prompt", "project"),
        (SyntheticSet, "extrinsic_prompt", "project"),
        (SyntheticRewrite, "prompt", "synthetic_set__project"),
    )
    rows: list[Any] = []
    for model, prompt, owner in protecting:
        rows += model.objects.filter(**{f"{prompt}__project__in": ids}).exclude(**{f"{owner}__in": ids})[:10]
    return rows


@transaction.atomic
def delete_project(project: Project) -> dict[str, int]:
    """Delete a project and everything in it, in one transaction; returns how many rows of each kind went.

    Judge runs, their judgements and synthetic sets point at the project's prompt versions with PROTECT (a prompt
    version a result was made with is never deleted under it), so deleting the project row alone is refused with
    ProtectedError even though they go with it: they are deleted first, then the project with the rest. ProjectError,
    with nothing deleted, when rows of another project were made with its prompt versions
    (``results_of_other_projects``).
    """
    from judging.models import JudgeRun, SyntheticSet  # judging builds on annotate; only deleting needs it here

    project = Project.objects.select_for_update().get(pk=project.pk)
    elsewhere = results_of_other_projects([project])
    if elsewhere:
        named = ", ".join(f"{type(row).__name__} {row.pk}" for row in elsewhere)
        raise ProjectError(f"{project.name} cannot be deleted: rows of other projects were made with its prompt "
                           f"versions ({named}); nothing was deleted")
    deleted: dict[str, int] = {}
    for rows in (JudgeRun.objects.filter(project=project), SyntheticSet.objects.filter(project=project),
                 Project.objects.filter(pk=project.pk)):
        for label, count in rows.delete()[1].items():
            deleted[label] = deleted.get(label, 0) + count
    return deleted


def get_or_create_project(slug: str) -> Project:
    project = Project.objects.filter(slug=slug).first()
    return project or create_project(slug, slug=slug)


def add_member(project: Project, username: str, role: str) -> Membership:
    if role not in Membership.Role.values:
        raise ProjectError(f"role: {role!r} is not one of {', '.join(Membership.Role.values)}")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise ProjectError(f"username: no user called {username!r}")
    membership, _ = Membership.objects.update_or_create(project=project, user=user, defaults={"role": role})
    return membership


@transaction.atomic
def assign_annotators(batch: Batch, annotators: Iterable[AbstractBaseUser], *, round: int = 1) -> list[Assignment]:
    """Give a batch to these annotators (project members with the annotator role); refused when none is named.
    The assignments it made, in the order given: someone who holds the round already keeps it and is not listed."""
    chosen = list(annotators)
    if not chosen:
        raise ProjectError(f"annotators: choose at least one annotator to give {batch.name!r} to; nothing was assigned")
    allowed = set(
        Membership.objects.filter(project=batch.project, role=Membership.Role.ANNOTATOR).values_list("user_id", flat=True)
    )
    for user in chosen:
        if user.pk not in allowed:
            raise ProjectError(f"annotators: {user} is not an annotator of {batch.project.slug!r}")
    made = (Assignment.objects.get_or_create(batch=batch, annotator=user, round=round) for user in chosen)
    return [assignment for assignment, created in made if created]


@dataclass
class EvenAssignments:
    """What assign_batches_evenly did: the assignments made, and the batches it could not fill."""

    made: int
    per_batch: int
    annotators: int  # the project's annotators who may be given batches (active, able to log in)
    without_login: int  # the project's annotators left out: inactive, or no password (imported ones)
    short: list[tuple[str, int]] = field(default_factory=list)  # (batch name, its annotators in the round)
    short_all: bool = False  # every batch of the project is short

    def describe(self) -> str:
        return f"{self.made} assignment{pluralize(self.made)} made."

    def warning(self) -> str | None:
        """Why some batches have fewer annotators than asked, or None when every batch has them all."""
        if not self.short:
            return None
        people = f"{self.annotators} annotator{pluralize(self.annotators)} who can log in"
        if self.without_login:
            people += (f" ({self.without_login} other{pluralize(self.without_login)} without a password or "
                       "inactive, e.g. imported, never assigned)")
        counts = {count for _, count in self.short}
        if len(counts) == 1:
            got = next(iter(counts))
            which = "Each batch" if self.short_all else f"{len(self.short)} batch{pluralize(len(self.short), 'es')}"
            return (f"{which} got only {got} of the {self.per_batch} annotators asked, because the project has "
                    f"{people}. Add annotators on the members page, then fill again.")
        named = ", ".join(f"{name} ({count})" for name, count in self.short[:10])
        more = f" and {len(self.short) - 10} more" if len(self.short) > 10 else ""
        return (f"{len(self.short)} batch{pluralize(len(self.short), 'es')} have fewer than the {self.per_batch} "
                f"annotators asked: {named}{more}, because the project has {people}. Add annotators on the members "
                "page, then fill again.")


@transaction.atomic
def assign_batches_evenly(project: Project, per_batch: int | None = None, *, round: int = 1) -> EvenAssignments:
    """Give every batch with too few annotators the least-loaded annotators; says what it made and which batches
    are still short of ``per_batch`` (the project has fewer annotators who can log in)."""
    per_batch = project.annotators_per_batch if per_batch is None else per_batch
    if per_batch < 1:
        raise ProjectError(f"per_batch: annotators per batch must be 1 or more, not {per_batch}")
    members = get_user_model().objects.filter(
        memberships__project=project, memberships__role=Membership.Role.ANNOTATOR
    )
    annotators = list(
        members.filter(is_active=True).exclude(password__startswith="!")  # noqa: S106 (unusable passwords start with !)
        .annotate(load=Count("assignments", filter=Q(assignments__batch__project=project, assignments__round=round)))
    )
    made = 0
    short: list[tuple[str, int]] = []
    batches = list(project.batches.all())
    for batch in batches:
        current = set(batch.assignments.filter(round=round).values_list("annotator_id", flat=True))
        candidates = sorted((u for u in annotators if u.pk not in current), key=lambda u: (u.load, u.pk))
        for user in candidates[: max(0, per_batch - len(current))]:
            Assignment.objects.create(batch=batch, annotator=user, round=round)
            current.add(user.pk)
            user.load += 1
            made += 1
        if len(current) < per_batch:
            short.append((batch.name, len(current)))
    return EvenAssignments(
        made=made, per_batch=per_batch, annotators=len(annotators), without_login=members.count() - len(annotators),
        short=short, short_all=bool(batches) and len(short) == len(batches),
    )


def assigned_samples(
    annotator: AbstractBaseUser, project: Project | None = None, *, batch_ids: Iterable[int] | None = None
) -> dict[int, list[int]]:
    """The sample ids of each batch assigned to the annotator (in any round), in page order, by batch id; only the
    batches ``batch_ids`` when given (a page of a list).

    The one definition of "samples assigned to you": the home page's per-batch totals and the span project
    page's "N samples assigned to you of M" both come from it, so the two pages agree. A batch without
    samples is absent.
    """
    assignments = Assignment.objects.filter(annotator=annotator)
    if project is not None:
        assignments = assignments.filter(batch__project=project)
    if batch_ids is not None:
        assignments = assignments.filter(batch_id__in=list(batch_ids))
    rows = (Sample.objects.filter(batch_id__in=assignments.values("batch_id"))
            .order_by("batch_id", "position", "id").values_list("batch_id", "id"))
    by_batch: dict[int, list[int]] = {}
    for batch_id, sample_id in rows:
        by_batch.setdefault(batch_id, []).append(sample_id)
    return by_batch


def assigned_sample_count(annotator: AbstractBaseUser, project: Project) -> int:
    """How many of the project's samples are assigned to the annotator: each sample once, whatever the rounds."""
    return sum(len(sample_ids) for sample_ids in assigned_samples(annotator, project).values())


def _reviews_by_batch_round(
    annotator: AbstractBaseUser, batch_ids: list[int]
) -> dict[tuple[int, int], dict[int, bool]]:
    """(batch id, round) -> {sample id: done} of the annotator's reviews in the batches ``batch_ids``.

    One query for all the assignments together: the home page lists a page of them, and a query each grew with them.
    """
    reviews: dict[tuple[int, int], dict[int, bool]] = {}
    rows = (
        SampleReview.objects.filter(annotator=annotator, sample__batch_id__in=batch_ids)
        .order_by()
        .values_list("sample__batch_id", "round", "sample_id", "done")
    )
    for batch_id, round, sample_id, done in rows:
        reviews.setdefault((batch_id, round), {})[sample_id] = done
    return reviews


def _assignments_in_order(annotator: AbstractBaseUser, project: Project | None) -> QuerySet[Assignment]:
    assignments = Assignment.objects.filter(annotator=annotator).select_related("batch__project")
    if project is not None:
        assignments = assignments.filter(batch__project=project)
    return assignments.order_by("batch__project__name", "batch__position", "round", "id")


def batch_progress(
    annotator: AbstractBaseUser, project: Project | None = None, *, batch_ids: Iterable[int] | None = None
) -> list[dict]:
    """An annotator's assignments with done counts and the next unfinished sample; only those of the batches
    ``batch_ids`` when given (the project page's page of batches)."""
    assignments = _assignments_in_order(annotator, project)
    if batch_ids is not None:
        assignments = assignments.filter(batch_id__in=list(batch_ids))
    return _progress_rows(annotator, list(assignments))


def batch_progress_page(annotator: AbstractBaseUser, page_number: Any = 1) -> Page:
    """Page ``page_number`` of the annotator's assignments (the home page), each row as batch_progress gives it
    (anything Paginator.get_page takes: a bad number gives page 1, one past the end the last page). Reads only the
    page's batches; the paginator counts every assignment."""
    page = Paginator(_assignments_in_order(annotator, None), ASSIGNMENTS_PER_PAGE).get_page(page_number)
    page.object_list = _progress_rows(annotator, list(page.object_list))
    return page


def _progress_rows(annotator: AbstractBaseUser, assignments: list[Assignment]) -> list[dict]:
    batch_ids = sorted({assignment.batch_id for assignment in assignments})
    by_batch = assigned_samples(annotator, batch_ids=batch_ids)
    reviews_of = _reviews_by_batch_round(annotator, batch_ids)
    rows = []
    for assignment in assignments:
        samples = by_batch.get(assignment.batch_id, [])
        reviews = reviews_of.get((assignment.batch_id, assignment.round), {})
        # The project page's and sample browser's rule: imported work is submitted without reviews.
        done = set(
            progress.done_samples(samples, reviews, submitted=assignment.status == Assignment.Status.SUBMITTED)
        )
        next_id = next((pk for pk in samples if pk not in done), None)
        first_id = samples[0] if samples else None  # a submitted batch still opens, read-only
        rows.append(
            {
                "assignment": assignment,
                "batch": assignment.batch,
                "project": assignment.batch.project,
                "round": assignment.round,
                "total": len(samples),
                "done": len(done),
                "percent": round(100 * len(done) / len(samples)) if samples else 100,
                "next_sample_id": next_id,
                "first_sample_id": first_id,
            }
        )
    return rows
