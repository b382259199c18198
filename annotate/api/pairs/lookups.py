"""Finding the pairs project for a caller, and turning the queue's refusals into API answers.

Roles are checked by annotate.access.get_pairs_project_for_user (outsiders
404, a role that may not do this 403); anonymous callers are refused (401) by
DRF before any of this runs.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response

from annotate import access
from annotate.api.errors import field_error
from annotate.models import Membership, Project
from annotate.services.pairs import queue

Role = Membership.Role
# Roles that see everyone's work on items, rounds and agreement; annotators see their own answers only.
REVIEWER_ROLES = (Role.ADMIN, Role.AUDITOR, Role.CURATOR)


def get_pairs_project(user: Any, slug: str) -> Project:
    """The pairs project with its settings, one query; 404 when there is none (the caller's role is checked later)."""
    project = Project.objects.select_related("pair_config").filter(slug=slug, kind=Project.Kind.PAIRS).first()
    if project is None:
        raise NotFound("No such pairs project")
    return project


def queue_refusal(error: queue.PairQueueError) -> Response:
    if error.status == 400:
        raise field_error(getattr(error, "field", None), error.message)
    if error.status == 404:
        raise NotFound(error.message)
    if error.status == 403:
        raise PermissionDenied(error.message)
    return Response({"detail": error.message, "code": error.code}, status=error.status)


def pairs_project_for_figures(user: Any, slug: str) -> tuple[Project, str]:
    """The pairs project and the caller's role, for the figure endpoints (agreement, a round's detail).

    A slug naming a project of another kind is a 400 on ``project`` naming its kind, for the project's members: the
    address is right and the project the wrong kind, as the span figures answer on a pairs project
    (annotate.api.results) and the judging API does (judging.api.lookups). Outsiders still get the 404, so the
    project's existence stays hidden. Asked only after the lookup failed: a pairs project costs no extra query.
    """
    try:
        return access.get_pairs_project_for_user(user, slug)
    except Http404:
        other = Project.objects.filter(slug=slug).exclude(kind=Project.Kind.PAIRS).first()
        if other is None or access.role_in(user, other) is None:
            raise
        raise field_error(
            "project",
            f"{other.slug!r} is a {other.kind} project ({other.get_kind_display().lower()}): pair agreement and "
            f"pair rounds are figures of pairs projects (kind {Project.Kind.PAIRS.value!r}). A span project's "
            f"figures are at /api/projects/{other.slug}/agreement/?scheme=..., "
            f"/api/projects/{other.slug}/halu-rates/ and /api/projects/{other.slug}/detector-eval/",
        ) from None
