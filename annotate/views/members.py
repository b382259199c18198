"""The members page of a project (admins): create or invite users, add members, change roles, remove them.

Every action answers with the page, or with its ``members`` partial for htmx:
200 when done, 400 with the error (nothing changed).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.middleware import HtmxDetails

from annotate import access
from annotate.models import Membership, Project
from annotate.services import members
from annotate.services.members import MemberError


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def _members_page(request: HtmxHttpRequest, project: Project, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {"project": project, "rows": members.project_member_rows(project), "roles": Membership.Role.choices,
               "pairs": project.kind == Project.Kind.PAIRS, **extra}
    template = "annotate/members.html#members" if request.htmx else "annotate/members.html"
    return render(request, template, context, status=status)


def _form_refused(
    request: HtmxHttpRequest, project: Project, error: MemberError, *, failed: str, form: Any, nothing: str
) -> HttpResponse:
    """The page with a refused form's problems beside their fields, all at once, and above them a line saying
    that nothing changed; a refusal that names no field is shown above as it is."""
    if not error.problems:
        return _members_page(request, project, error=str(error), failed=failed, form=form, status=400)
    count = sum(len(messages) for messages in error.problems.values())
    summary = f"{nothing}: see the message beside the field." if count == 1 else (
        f"{nothing}: see the {count} messages beside the fields.")
    return _members_page(request, project, error=summary, field_errors=error.problems, failed=failed, form=form,
                         status=400)


@never_cache  # an invitation link is shown once; no cache keeps it
@require_http_methods(["GET", "POST"])
@login_required
def members_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """GET: the page. POST: give an existing user a role (or change a member's role)."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    if request.method == "GET":
        return _members_page(request, project)
    try:
        membership = members.add_member(project, request.POST.get("username", ""), request.POST.get("role", ""))
    except MemberError as error:
        return _form_refused(request, project, error, failed="add", form=request.POST, nothing="Nobody was added")
    return _members_page(request, project, notice=f"{membership.user.username} is {membership.role} of {project.name}.")


@never_cache
@require_POST
@login_required
def member_create(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Create a user in this project, with a typed password or as an invitation with a set-password link."""
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    how = request.POST.get("access", "invite")
    form = {key: request.POST.get(key, "") for key in ("username", "email", "role", "access")}  # never the password
    try:
        if how not in ("invite", "password"):
            raise MemberError("Choose how they get in: \"Invite\" or \"Set a password\"", field="access")
        password = request.POST.get("password", "") if how == "password" else None
        new = members.create_member(
            project, request.POST.get("username", ""), role=request.POST.get("role", ""),
            email=request.POST.get("email", ""), password=password,
        )
    except MemberError as error:
        return _form_refused(request, project, error, failed="create", form=form, nothing="Nobody was created")
    user = new.membership.user
    if new.set_password_path is None:
        return _members_page(request, project, notice=f"{user.username} was created as {new.membership.role}; "
                                                      "they can log in with the password you chose.")
    return _members_page(
        request, project, notice=f"{user.username} was invited as {new.membership.role}.",
        invitation={"username": user.username, "url": request.build_absolute_uri(new.set_password_path)},
    )


@require_POST
@login_required
def member_role(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    membership = access.get_membership_for_admin(request.user, slug, pk)
    try:
        members.change_role(membership, request.POST.get("role", ""))
    except MemberError as error:
        return _members_page(request, membership.project, error=str(error), failed=membership.pk, status=400)
    return _members_page(
        request, membership.project, notice=f"{membership.user.username} is now {membership.role}."
    )


@require_POST
@login_required
def member_remove(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    membership = access.get_membership_for_admin(request.user, slug, pk)
    try:
        dropped = members.remove_member(membership)
    except MemberError as error:
        return _members_page(request, membership.project, error=str(error), failed=membership.pk, status=400)
    note = f" Their {dropped} unstarted assignment{'s' if dropped != 1 else ''} went with them." if dropped else ""
    return _members_page(
        request, membership.project, notice=f"{membership.user.username} is no longer a member.{note}"
    )


@never_cache
@require_POST
@login_required
def member_invitation(request: HtmxHttpRequest, slug: str, pk: int) -> HttpResponse:
    """A fresh set-password link for a member without a password (invited earlier, or imported from a file)."""
    membership = access.get_membership_for_admin(request.user, slug, pk)
    try:
        path = members.invitation_path(membership)
    except MemberError as error:
        return _members_page(request, membership.project, error=str(error), failed=membership.pk, status=400)
    return _members_page(
        request, membership.project,
        invitation={"username": membership.user.username, "url": request.build_absolute_uri(path)},
    )
