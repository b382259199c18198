"""The pair labeling page: one key per answer, the next item at once.

The page is a shell: its script asks the pairs API for the judge's next item
and posts each answer there, so serving and answering follow one set of rules
(the queue service behind the API) whether a judge uses the page or a script.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotate import access
from annotate.models import Membership, PairItem, Project
from annotate.services.pairs.guidelines import pair_guidelines
from annotate.services.pairs.overview import admin_names, block_of

# Who labels pairs (annotators, and admins): the queue's rule, so the page and the API agree.
from annotate.services.pairs.queue import JUDGE_ROLES, blocked_message, judge_progress


def get_pairs_project_for_judge(user: access.AnyUser, slug: str) -> tuple[Project, str]:
    """The pairs project and the user's role; 404 for outsiders and other kinds, 403 for non-judging roles."""
    project, role = access.get_pairs_project_for_user(user, slug)
    if role not in JUDGE_ROLES:
        raise access.Forbidden("Only the project's annotators and admins label pairs")
    return project, role


def projects_to_label(user: access.AnyUser) -> QuerySet[Project]:
    """The pairs projects whose items the user may judge, for the home page's "Label pairs" links."""
    pairs = access.projects_for(user).filter(kind=Project.Kind.PAIRS)
    if user.is_superuser:
        return pairs
    return pairs.filter(memberships__user=user, memberships__role__in=JUDGE_ROLES).distinct()


@require_GET
@login_required
def label_page(request: HttpRequest, slug: str) -> HttpResponse:
    project, role = get_pairs_project_for_judge(request.user, slug)
    guidelines, default_guidelines = pair_guidelines(project)
    # A blocked judge's page says so from the start, with no "items left": the queue refuses them every item, and
    # their answers no longer count (the project page leaves progress out for the same reason).
    judge_block = block_of(project, request.user)
    blocked = blocked_message(project) if judge_block is not None else None
    api = {
        "project": project.slug,
        "next_url": f"{reverse('api-pairs-next')}?project={project.slug}",
        "undo_url": f"{reverse('api-pairs-undo')}?project={project.slug}",
        # The script puts the item's id in place of the 0.
        "judgement_url": reverse("api-pair-judgements", kwargs={"id": 0}),
        # Until the first item arrives (and when none does): the judge's answers and the items open to them.
        "progress": None if blocked else judge_progress(project, request.user),
        "blocked": blocked,
        # Nothing to label yet (no item imported) is not "you answered everything".
        "project_empty": not PairItem.objects.filter(project=project).exists(),
        # While nothing is left, the page asks again by itself this often (label/waiting.js).
        "check_every_ms": settings.PAIRS_LABEL_CHECK_MS,
    }
    return render(
        request,
        "annotate/pairs/label.html",
        {
            "project": project,
            "role": role,
            "guidelines": guidelines,
            "default_guidelines": default_guidelines,
            "api": api,
            "blocked": blocked,
            "judge_block": judge_block,
            # Whom a blocked judge asks about the block.
            "admins": admin_names(project) if judge_block is not None else [],
            "import_url": reverse("project", args=[project.slug]) + "#import" if role == Membership.Role.ADMIN else None,
        },
    )
