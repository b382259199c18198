"""Finding the pairs project for a caller, and turning the queue's refusals into API answers.

Roles are checked by annotate.access.get_pairs_project_for_user (outsiders
404, a role that may not do this 403); anonymous callers are refused (401) by
DRF before any of this runs.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from annotate import access
from annotate.api.errors import field_error
from annotate.models import Membership, Project
from annotate.services.pairs import queue

Role = Membership.Role
# Roles that see everyone's work on items, rounds and agreement; annotators see their own answers only.
REVIEWER_ROLES = (Role.ADMIN, Role.AUDITOR, Role.CURATOR)


def get_pairs_project(user: Any, slug: str) -> Project:
    """The pairs project with its settings, one query (the caller's role is checked later, by the queue).

    404 when there is none; a member's span project is the 400 of ``_told_the_kind``."""
    project = Project.objects.select_related("pair_config").filter(slug=slug, kind=Project.Kind.PAIRS).first()
    if project is None:
        _told_the_kind(user, slug)
        raise NotFound("No such pairs project")
    return project


def project_of_item_to_judge(user: Any, item_id: int) -> Project:
    """The pairs project of item ``item_id``, for a caller who may judge in it; asked before the answer is read.

    An outsider gets the 404 of a missing item (the project's existence stays hidden) and a role that does not
    judge the queue's 403 (``queue.NotAJudge``), whatever the body holds: a caller who may not answer is told
    that, not what their answer lacks. The queue checks again under the judge's lock, with the block."""
    project = Project.objects.select_related("pair_config").filter(
        kind=Project.Kind.PAIRS, pair_items__pk=item_id
    ).first()
    role = access.role_in(user, project) if project is not None else None
    if project is None or role is None:
        raise NotFound("No such pair item")
    queue.check_judge_role(role)
    return project


def project_to_judge(user: Any, slug: str) -> Project:
    """The pairs project ``slug`` for a caller who may judge in it (404 outsiders, the queue's 403 for a role that
    does not judge), for the judge's writes that read a body after the lookup."""
    project, role = pairs_project_for(user, slug)
    queue.check_judge_role(role)
    return project


def queue_refusal(error: queue.PairQueueError) -> Response:
    if error.status == 400:
        raise field_error(getattr(error, "field", None), error.message)
    if error.status == 404:
        raise NotFound(error.message)
    # 403s and 409s carry their code: a page tells a block ("blocked") from a role that does not judge.
    return Response({"detail": error.message, "code": error.code}, status=error.status)


def pairs_project_for(user: Any, slug: str, *, roles: tuple[str, ...] | None = None) -> tuple[Project, str]:
    """The pairs project and the caller's role (annotate.access.get_pairs_project_for_user: 403 for a role not in
    ``roles``), for every pairs endpoint; a member's span project is the 400 of ``_told_the_kind``."""
    try:
        return access.get_pairs_project_for_user(user, slug, roles=roles)
    except Http404:
        _told_the_kind(user, slug)
        raise


def _told_the_kind(user: Any, slug: str) -> None:
    """A slug naming a project of another kind is a 400 on ``project`` naming its kind, for the project's members.

    The address is right and the project the wrong kind, as the span figures answer on a pairs project
    (annotate.api.results) and the judging API does (judging.api.lookups). Outsiders still get the 404, so the
    project's existence stays hidden. Asked only after the lookup failed: a pairs project costs no extra query.
    """
    other = access.member_project_of_other_kind(user, slug, Project.Kind.PAIRS)
    if other is None:
        return
    raise field_error(
        "project",
        f"{other.slug!r} is a {other.kind} project ({other.get_kind_display().lower()}): items, answers, rounds, "
        f"flags and pair agreement belong to pairs projects (kind {Project.Kind.PAIRS.value!r}); nothing was "
        f"changed. A span project's samples are at /api/samples/?project={other.slug} and its figures at "
        f"/api/projects/{other.slug}/agreement/?scheme=..., /api/projects/{other.slug}/halu-rates/ and "
        f"/api/projects/{other.slug}/detector-eval/",
    )
