"""Finding the span project a judging endpoint works on, and telling its members when the project is of another kind.

judging.access answers 404 for a slug that names no span project, which is right for the pages and for
outsiders. A member of a pairs project who asks the API for its judges, runs, judgements or audits gets a 400 on
``project`` instead, naming the project's kind, as the span figures do on a pairs project
(annotate.api.results.span_project_for_results): the address is right, the project is the wrong kind. Outsiders
still get the 404 (the project's existence stays hidden) and anonymous callers DRF's 401, before any lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, ParamSpec, TypeVar

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework.exceptions import ValidationError

from annotate.access import AnyUser, member_project_of_other_kind
from annotate.api.errors import field_error
from annotate.api.schema import FIELD_ERRORS_SCHEMA
from annotate.models import Project

Params = ParamSpec("Params")
Found = TypeVar("Found")

# The 400 of an operation that reads nothing but the project: the pairs project's refusal.
NOT_A_SPAN_PROJECT = OpenApiResponse(
    FIELD_ERRORS_SCHEMA,
    description="The project is not a span project (judges work on span projects only): `project` names its kind; "
    "nothing was changed. Its members get this answer; to anyone else it is a 404.",
)
# The same, for an operation that also reads a body or query parameters.
NOT_A_SPAN_PROJECT_OR_BAD_INPUT = OpenApiResponse(
    FIELD_ERRORS_SCHEMA,
    description="Bad input, or a project that is not a span project; nothing was changed. An object keyed by the "
    "field or query parameter at fault, each with a list of messages; `project` when the project is of another "
    "kind (judges work on span projects only).",
)


def span_project_lookup(
    lookup: Callable[Concatenate[AnyUser, str, Params], Found], user: AnyUser, slug: str,
    *args: Params.args, **kwargs: Params.kwargs,
) -> Found:
    """``lookup(user, slug, ...)`` (a judging.access getter); its 404 becomes a 400 for a member of a non-span project.

    Asked only after the getter refused, so a span project costs no extra query.
    """
    try:
        return lookup(user, slug, *args, **kwargs)
    except Http404:
        refusal = other_kind_refusal(user, slug)
        if refusal is None:
            raise
        raise refusal from None


def other_kind_refusal(user: AnyUser, slug: str) -> ValidationError | None:
    """The 400 on ``project`` when ``slug`` names a project of another kind than spans that ``user`` is a member of."""
    project = member_project_of_other_kind(user, slug, Project.Kind.SPANS)
    if project is None:
        return None
    elsewhere = ""
    if project.kind == Project.Kind.PAIRS:
        elsewhere = (f". A pairs project's items and votes are at /api/pairs/?project={project.slug} and its rounds "
                     f"at /api/projects/{project.slug}/pair-rounds/")
    return field_error(
        "project",
        f"{project.slug!r} is a {project.kind} project ({project.get_kind_display().lower()}): judges, judge runs, "
        f"judgements and audits work on span projects only (kind {Project.Kind.SPANS.value!r}); nothing was "
        f"changed{elsewhere}",
    )
