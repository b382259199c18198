"""Who may see or change what in the judging app: one place, raising 404 (hide existence) or 403."""

from __future__ import annotations

from django.http import Http404

from annotate.access import AnyUser, Forbidden, role_in
from annotate.models import Membership, Project
from judging.models import Audit, AuditItem, Judge, JudgeRun, SyntheticSet

Role = Membership.Role


def get_judging_project(user: AnyUser, slug: str, *, roles: tuple[str, ...] | None = None) -> tuple[Project, str]:
    """A span project and the user's role in it; 404 for outsiders and pairs projects, 403 for other roles."""
    project = Project.objects.filter(slug=slug, kind=Project.Kind.SPANS).first()
    role = role_in(user, project) if project else None
    if project is None or role is None:
        raise Http404("No such project")
    if roles is not None and role not in roles:
        raise Forbidden(f"Your role in this project ({role}) may not do this")
    return project, role


def get_project_for_judging_admin(user: AnyUser, slug: str) -> Project:
    """Judges, runs, prompts and thresholds are the project admins' to see and change."""
    return get_judging_project(user, slug, roles=(Role.ADMIN,))[0]


def get_project_for_auditor(user: AnyUser, slug: str) -> tuple[Project, str]:
    """The audit queue: the project's auditors and admins (annotators work blind, so they never see judges)."""
    return get_judging_project(user, slug, roles=(Role.ADMIN, Role.AUDITOR))


def get_project_for_export(user: AnyUser, slug: str, what: str) -> tuple[Project, AnyUser | None]:
    """A span project whose ``what`` (judgements or audits) the user may download, and whose audits they get.

    Admins download everything: judgements (the runs' data, theirs alone to see) and every auditor's audits.
    Auditors download their own audits only (the verdicts they gave and the judge's score each was shown: nothing
    they have not seen); that is the second value, None for admins. Annotators never: they work blind.
    """
    project, role = get_judging_project(user, slug, roles=(Role.ADMIN, Role.AUDITOR))
    if role == Role.ADMIN:
        return project, None
    if what != "audits":
        raise Forbidden("Only the project's admins export judgements; auditors export their own audits")
    return project, user


def get_judge_for_admin(user: AnyUser, slug: str, pk: int) -> Judge:
    project = get_project_for_judging_admin(user, slug)
    judge = Judge.objects.filter(project=project, pk=pk).first()
    if judge is None:
        raise Http404("No such judge in this project")
    return judge


def get_run_for_admin(user: AnyUser, pk: int) -> JudgeRun:
    """A judge run by id (the API's /judge-runs/<id>/): admins of its project; 404 for everyone else."""
    run = JudgeRun.objects.select_related("judge", "project").filter(pk=pk).first()
    if run is None or role_in(user, run.project) is None:
        raise Http404("No such judge run")
    if role_in(user, run.project) != Role.ADMIN:
        raise Forbidden("Only the project's admins may see its judge runs")
    return run


def get_run_to_cancel(user: AnyUser, slug: str, pk: int) -> JudgeRun:
    """A run of span project ``slug``, for one of its admins to cancel: 404 for outsiders, a pairs project and a
    run of another project, 403 for another role."""
    project = get_project_for_judging_admin(user, slug)
    run = JudgeRun.objects.select_related("judge", "project").filter(project=project, pk=pk).first()
    if run is None:
        raise Http404("No such judge run in this project")
    return run


def get_audit_item_for_auditor(user: AnyUser, pk: int) -> AuditItem:
    item = AuditItem.objects.select_related("project", "sample").filter(pk=pk).first()
    role = role_in(user, item.project) if item else None
    if item is None or role is None:
        raise Http404("No such audit item")
    if role not in (Role.ADMIN, Role.AUDITOR):
        raise Forbidden("Only the project's auditors and admins audit judge scores")
    return item


def get_own_audit(user: AnyUser, pk: int) -> Audit:
    """An audit by id, to change its verdict (the API's PUT /audits/<id>/): its own auditor alone. 404 when it does
    not exist or the user is no member of its project; 403 for an annotator, and for another auditor's audit (an
    admin's included: a verdict is its auditor's word)."""
    audit = Audit.objects.select_related("item__project").filter(pk=pk).first()
    role = role_in(user, audit.item.project) if audit else None
    if audit is None or role is None:
        raise Http404("No such audit")
    if role not in (Role.ADMIN, Role.AUDITOR):
        raise Forbidden("Only the project's auditors and admins audit judge scores")
    if audit.auditor_id != user.pk:
        raise Forbidden(f"audit {pk} is another auditor's verdict: you may change only your own")
    return audit


def get_synthetic_set_for_admin(user: AnyUser, slug: str, pk: int) -> SyntheticSet:
    project = get_project_for_judging_admin(user, slug)
    found = SyntheticSet.objects.filter(project=project, pk=pk).first()
    if found is None:
        raise Http404("No such synthetic set in this project")
    return found
