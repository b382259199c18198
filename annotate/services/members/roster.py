"""A project's members: adding, changing a role, removing, and the rows the members page lists."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from annotate.models import Assignment, Membership, Project
from annotate.services.members.common import UNKNOWN_USER, MemberError, Role, _describe, _role
from annotate.services.members.duties import assignment_work


def _open_assignments(project: Project, user: Any) -> list[Assignment]:
    """The member's open assignments, locked (their rows alone, in batch order: annotate.services.freeze's lock order).

    A done mark or span write in flight holds its assignment's row, so the caller counts the work after it is
    stored; one arriving later waits, then finds the assignment gone. A round submitted meanwhile is left out.
    """
    return list(
        Assignment.objects.filter(batch__project=project, annotator=user)
        .exclude(status=Assignment.Status.SUBMITTED)
        .select_related("batch")
        .select_for_update(of=("self",))
        .order_by("batch__position", "batch_id", "round")
    )


def _lock_admins(project: Project) -> list[Membership]:
    """The project's admin rows, locked, so two admins cannot demote each other at the same moment."""
    return list(Membership.objects.select_for_update().filter(project=project, role=Role.ADMIN).order_by("pk"))


def _refuse_losing_last_admin(membership: Membership, change: str) -> None:
    """``change``: what the refused action would do to them, in words ("be removed")."""
    admins = _lock_admins(membership.project)
    if membership.role == Role.ADMIN and [m.pk for m in admins] == [membership.pk]:
        raise MemberError(
            f"{membership.user.get_username()} is the last admin of {membership.project.name} and cannot {change}; "
            "make someone else admin first"
        )


@dataclass(frozen=True)
class AddedMember:
    membership: Membership
    created: bool  # False: they were a member already, and their role was changed (or was this one already)


def add_member(project: Project, username: str, role: str) -> Membership:
    """Give an existing user a role in the project (or change the role of one who is a member already)."""
    return add_or_change_member(project, username, role).membership


@transaction.atomic
def add_or_change_member(project: Project, username: str, role: str) -> AddedMember:
    """``add_member``, saying whether the membership is new (the API answers 201 then, 200 for a role change)."""
    role = _role(role)
    if not username.strip():
        raise MemberError("Type the username of the person to add.", field="username")
    user_model = get_user_model()
    field = user_model.USERNAME_FIELD
    # In any case, as clean_username refuses a new "Bob" beside "bob"; the exact spelling first, where an
    # older import left both.
    user = user_model.objects.filter(**{field: username.strip()}).first() or user_model.objects.filter(
        **{f"{field}__iexact": username.strip()}
    ).order_by("pk").first()
    if user is None:
        raise MemberError(f"Username: no user is called {username.strip()!r}; create them under \"Create a user\" "
                          "below", field="username", reason=UNKNOWN_USER, value=username.strip())
    membership = Membership.objects.filter(project=project, user=user).select_related("user", "project").first()
    if membership is not None:
        return AddedMember(change_role(membership, role), created=False)
    return AddedMember(Membership.objects.create(project=project, user=user, role=role), created=True)


@transaction.atomic
def change_role(membership: Membership, role: str) -> Membership:
    """Change a member's role; the last admin keeps theirs, and open duties must be handed on first."""
    role = _role(role)
    if role == membership.role:
        return membership
    _refuse_losing_last_admin(membership, "be given another role")
    if membership.role == Role.ANNOTATOR:
        # An open assignment of a non-annotator could never be finished, and round 2 would wait on it.
        held = _open_assignments(membership.project, membership.user)
        if held:
            raise MemberError(
                f"{membership.user.get_username()} still holds open assignments "
                f"({', '.join(map(_describe, held))}), so they stay an annotator; unassign or reassign them on the "
                "batch's page first"
            )
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def remove_member(membership: Membership) -> int:
    """Take a member out of the project; returns how many of their open, unworked assignments went with them."""
    _refuse_losing_last_admin(membership, "be removed")
    held = _open_assignments(membership.project, membership.user)
    worked = [assignment for assignment in held if assignment_work(assignment)]
    if worked:
        raise MemberError(
            f"{membership.user.get_username()} has work in open assignments "
            f"({', '.join(map(_describe, worked))}); unassign or reassign them on the batch's page first"
        )
    Assignment.objects.filter(pk__in=[assignment.pk for assignment in held]).delete()
    membership.delete()
    return len(held)


def project_member_rows(project: Project) -> list[dict[str, Any]]:
    """The members page's table and the API's member list: span projects list each member's batches; pairs
    projects, which have none, each judge's answers and block as well."""
    if project.kind == Project.Kind.PAIRS:
        from annotate.services.pairs.overview import pair_member_rows  # it builds on member_rows below

        return pair_member_rows(project)
    return member_rows(project)


def member_rows(project: Project) -> list[dict[str, Any]]:
    """The members page's table: each member with their assignments in this project."""
    memberships = list(
        Membership.objects.filter(project=project).select_related("user").order_by("role", "user__username")
    )
    by_user: dict[int, list[Assignment]] = {}
    for assignment in (
        Assignment.objects.filter(batch__project=project).select_related("batch").order_by("batch__position", "round")
    ):
        by_user.setdefault(assignment.annotator_id, []).append(assignment)
    other_projects = set(
        Membership.objects.filter(user__in=[m.user_id for m in memberships])
        .exclude(project=project)
        .values_list("user_id", flat=True)
    )
    rows = []
    for membership in memberships:
        user = membership.user
        can_log_in = user.has_usable_password()
        rows.append(
            {
                "membership": membership,
                "user": user,
                "can_log_in": can_log_in,
                "can_invite": not can_log_in
                and not (user.is_staff or user.is_superuser)
                and user.pk not in other_projects,
                "assignments": by_user.get(user.pk, []),
            }
        )
    return rows


