"""The spammer flags of a pairs project (admins): each flag's rule and figures, block the judge or dismiss the flag."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotate import access
from annotate.models import BlockedJudge, JudgeFlag, Project
from annotate.pairmath import spam
from annotate.services.pairs import flags


def _pairs_project_for_admin(request: HttpRequest, slug: str) -> Project:
    return access.get_pairs_project_for_user(request.user, slug, admin=True)[0]


def flag_in_words(flag: JudgeFlag) -> str:
    """The rule the judge tripped, with its figures, in one sentence."""
    return f"{flag.get_rule_display()}: {spam.explain(flag.rule, flag.figures or {})}."


def _render_flags(request: HttpRequest, project: Project, *, errors: dict[int, str] | None = None,
                  status: int = 200) -> HttpResponse:
    rows = JudgeFlag.objects.filter(project=project).select_related("judge", "reviewed_by").order_by("judge__username",
                                                                                                     "rule")
    blocked = BlockedJudge.objects.filter(project=project).select_related("judge", "blocked_by").order_by("-blocked_at")
    blocked_ids = {block.judge_id for block in blocked}
    context = {
        "project": project,
        "open_flags": [{"flag": flag, "words": flag_in_words(flag), "blocked": flag.judge_id in blocked_ids,
                        "error": (errors or {}).get(flag.pk)}
                       for flag in rows if flag.status == JudgeFlag.Status.OPEN],
        "reviewed_flags": [{"flag": flag, "words": flag_in_words(flag)}
                           for flag in rows if flag.status != JudgeFlag.Status.OPEN],
        "blocked": blocked,
    }
    template = "annotate/pairs/flags.html#flag_lists" if request.htmx else "annotate/pairs/flags.html"
    return render(request, template, context, status=status)


@require_GET
@login_required
def flags_page(request: HttpRequest, slug: str) -> HttpResponse:
    project = _pairs_project_for_admin(request, slug)
    # "disagrees" moves as others answer the same items: show figures that are true now, as the API does.
    flags.refresh_flags(project)
    return _render_flags(request, project)


@require_POST
@login_required
def block(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Block the flagged judge: their judgements stop counting and their items go back to the queue."""
    project = _pairs_project_for_admin(request, slug)
    flag = get_object_or_404(JudgeFlag.objects.select_related("judge"), pk=pk, project=project)
    reason = request.POST.get("reason", "").strip()
    problem = "reason: say why you block this judge; it is kept with the block." if not reason else None
    if problem is None:
        try:
            blocked = flags.block_judge(project, flag.judge, request.user, reason)
        except ValueError as error:
            problem = str(error)
    if problem is not None:
        if request.htmx:
            return _render_flags(request, project, errors={flag.pk: problem})
        messages.error(request, f"{flag.judge.username} was not blocked. {problem}")
    elif request.htmx:
        return _render_flags(request, project)
    else:
        messages.success(request, f"{flag.judge.username} is blocked: their judgements no longer count, and "
                                  f"{blocked.items_reopened} item(s) they judged went back to the queue.")
    return HttpResponseRedirect(reverse("pairs-flags", args=[project.slug]))


@require_POST
@login_required
def dismiss(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project = _pairs_project_for_admin(request, slug)
    flag = get_object_or_404(JudgeFlag.objects.select_related("judge"), pk=pk, project=project)
    try:
        flags.dismiss_flag(flag, request.user)
    except flags.FlagReviewError as error:
        if request.htmx:
            return _render_flags(request, project, errors={flag.pk: str(error)}, status=200)
        messages.error(request, f"Not dismissed: {error}.")
    else:
        if request.htmx:
            return _render_flags(request, project)
        messages.success(request, f"Flag on {flag.judge.username} dismissed.")
    return HttpResponseRedirect(reverse("pairs-flags", args=[project.slug]))


@require_POST
@login_required
def unblock(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Lift a block: the judge's answers count again and the items they judged are decided again."""
    project = _pairs_project_for_admin(request, slug)
    block = get_object_or_404(BlockedJudge.objects.select_related("judge"), judge_id=pk, project=project)
    decided = flags.unblock_judge(project, block.judge, request.user)
    if request.htmx:
        return _render_flags(request, project)
    messages.success(request, f"{block.judge.username} is no longer blocked: their judgements count again, and "
                              f"{decided} item(s) they judged were decided again.")
    return HttpResponseRedirect(reverse("pairs-flags", args=[project.slug]))
