"""Who may see or change what. Every view and API endpoint looks objects up here."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404

from annotate.models import Assignment, Batch, Membership, Project, Sample, SpanAnnotation

Role = Membership.Role
AnyUser = AbstractBaseUser | AnonymousUser


class Forbidden(PermissionDenied):
    """The user can see the object but may not do this to it; Django and DRF answer 403."""


def role_in(user: AnyUser, project: Project) -> str | None:
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.ADMIN
    cache = getattr(user, "_faithlab_roles", None)
    if cache is None:
        cache = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
        user._faithlab_roles = cache  # type: ignore[union-attr]
    return cache.get(project.pk)


def projects_for(user: AnyUser) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def get_project_for_user(user: AnyUser, slug: str, *, admin: bool = False) -> tuple[Project, str]:
    project = Project.objects.filter(slug=slug).first()
    role = role_in(user, project) if project else None
    if project is None or role is None:
        raise Http404("No such project")
    if admin and role != Role.ADMIN:
        raise Forbidden("Only the project's admins may do this")
    return project, role


def get_project_for_exporter(user: AnyUser, slug: str) -> tuple[Project, str]:
    """Exports hold everyone's work: admins and auditors only (annotators are blind in round 1)."""
    project, role = get_project_for_user(user, slug)
    if role not in (Role.ADMIN, Role.AUDITOR):
        raise Forbidden("Only the project's admins and auditors may export its data")
    return project, role


def get_project_for_curator(user: AnyUser, slug: str) -> tuple[Project, str]:
    project, role = get_project_for_user(user, slug)
    if role not in (Role.ADMIN, Role.CURATOR):
        raise Forbidden("Only the project's admins and curators adjudicate")
    return project, role


def samples_for(user: AnyUser, project: Project) -> QuerySet[Sample]:
    role = role_in(user, project)
    samples = Sample.objects.filter(project=project)
    if role in (Role.ADMIN, Role.AUDITOR, Role.CURATOR):
        return samples
    if role == Role.ANNOTATOR:
        return samples.filter(batch__assignments__annotator=user).distinct()
    return samples.none()


def get_sample_for_user(user: AnyUser, pk: int, *, write: bool = False) -> tuple[Sample, str]:
    """The sample and the user's role; 404 unless the user may see it, 403 for a forbidden write."""
    sample = Sample.objects.select_related("project", "passage", "batch").filter(pk=pk).first()
    role = role_in(user, sample.project) if sample else None
    if sample is None or role is None:
        raise Http404("No such sample")
    if role == Role.ANNOTATOR:
        if not Assignment.objects.filter(batch_id=sample.batch_id, annotator=user).exists():
            raise Http404("No such sample")
    elif write:
        raise Forbidden("Only the batch's annotators write spans")
    return sample, role


def get_batch_for_user(user: AnyUser, pk: int) -> tuple[Batch, str]:
    batch = Batch.objects.select_related("project").filter(pk=pk).first()
    role = role_in(user, batch.project) if batch else None
    if batch is None or role is None:
        raise Http404("No such batch")
    if role == Role.ANNOTATOR and not batch.assignments.filter(annotator=user).exists():
        raise Http404("No such batch")
    return batch, role


def visible_spans(user: AnyUser, sample: Sample, round: int) -> QuerySet[SpanAnnotation]:
    """Spans of one round that the user may see: an annotator sees only their own."""
    spans = SpanAnnotation.objects.filter(sample=sample, round=round).select_related("annotator")
    if role_in(user, sample.project) == Role.ANNOTATOR:
        return spans.filter(annotator=user)
    return spans


def get_span_for_user(user: AnyUser, pk: int) -> SpanAnnotation:
    """A span the user may change: only its own author, an annotator of its batch."""
    span = SpanAnnotation.objects.select_related("sample__project", "sample__batch").filter(pk=pk).first()
    if span is None or not user.is_authenticated:
        raise Http404("No such span")
    role = role_in(user, span.sample.project)
    if role is None or (role == Role.ANNOTATOR and span.annotator_id != user.pk):
        raise Http404("No such span")
    if span.annotator_id != user.pk:
        raise Forbidden("Only the span's author may change it")
    return span
