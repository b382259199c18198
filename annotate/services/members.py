"""Who works on a project: new users, members and their roles, and batch duties moved between annotators.

The rules (README, "Running a project"):

- A project keeps an admin: its last admin can be neither removed nor given another role.
- The figures (agreement, rates, detector evaluation, curation) read only submitted
  assignments. An annotator's spans and done marks are never deleted here: unassigning them
  keeps them stored, and in exports (which list every stored span), but out of the figures,
  and the annotator can no longer open the batch. Because that drops work from the figures,
  unassigning or reassigning someone who has work in the round needs an explicit
  confirmation, and a submitted round must be re-opened first.
- Removing a member drops their open assignments that hold no work, and is refused while an
  open assignment holds work (unassign or reassign it first). Their submitted assignments stay
  and keep counting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotate.models import Assignment, Batch, Membership, Project, Sample, SampleReview, SpanAnnotation
from annotate.services import progress
from annotate.services.rounds import RECONCILIATION_ROUND

Role = Membership.Role
# MemberError.reason values that a caller other than the members page words itself (the API, which has no form
# "below" to point at).
UNKNOWN_USER, UNKNOWN_ROLE = "unknown_user", "unknown_role"
# One character of a username, as Django's UnicodeUsernameValidator allows them.
USERNAME_CHARACTER = re.compile(r"[\w.@+-]")


class MemberError(ValueError):
    """Bad input or a refused change, in the pages' words: a bad field is named by its label on the members page
    ("Username: ..."), a refused change says who and what ("alice still holds ...").

    ``problems`` maps each bad field of a form to its messages (empty for a refused change), so the page shows every
    one beside its field at once rather than one per try. ``reason`` (with ``value``, what was sent) names the fault
    for a caller that words it its own way: the message is the members page's, which points at its own forms.
    """

    def __init__(self, message: str, *, field: str | None = None, reason: str = "", value: str = "") -> None:
        super().__init__(message)
        self.problems: dict[str, list[str]] = {field: [message]} if field else {}
        self.reason = reason
        self.value = value

    @classmethod
    def of(cls, problems: dict[str, list[str]]) -> MemberError:
        """Several bad fields in one error; its message lists them all, in the form's order."""
        error = cls(" ".join(message for messages in problems.values() for message in messages))
        error.problems = problems
        return error


class NeedsConfirmation(MemberError):
    """The change would take an annotator's work out of the figures; repeat it with ``confirm=True``."""


@dataclass(frozen=True)
class Work:
    """What an annotator has done in one batch and round."""

    spans: int
    done: int  # samples marked done

    def __bool__(self) -> bool:
        return bool(self.spans or self.done)

    def __str__(self) -> str:
        spans = f"{self.spans} span{'' if self.spans == 1 else 's'}"
        done = f"{self.done} sample{'' if self.done == 1 else 's'} marked done"
        return f"{spans} and {done}"


@dataclass(frozen=True)
class NewMember:
    membership: Membership
    # Path of the page where an invited user chooses a password; None when the admin typed one.
    set_password_path: str | None


def _role(role: str) -> str:
    if role not in Role.values:
        raise MemberError(f"Role: {role!r} is not a role here; choose {', '.join(Role.values[:-1])} or {Role.values[-1]}",
                          field="role", reason=UNKNOWN_ROLE, value=role)
    return role


def _describe(assignment: Assignment) -> str:
    return f"{assignment.batch.name} round {assignment.round}"


# --------------------------------------------------------------------------- users


def _character_names(characters: set[str]) -> str:
    return ", ".join("spaces" if character.isspace() else repr(character) for character in sorted(characters))


def clean_username(username: str) -> str:
    """The username as it will be stored, or MemberError naming what is wrong with it in the page's words."""
    user_model = get_user_model()
    username = user_model.normalize_username(username.strip())
    if not username:
        raise MemberError("Username: type a username", field="username")
    field = user_model._meta.get_field(user_model.USERNAME_FIELD)
    # Django's own rules (UnicodeUsernameValidator, the column's length), said here in the page's words.
    if field.max_length and len(username) > field.max_length:
        raise MemberError(f"Username: at most {field.max_length} characters (this one has {len(username)})",
                          field="username")
    refused = {character for character in username if not USERNAME_CHARACTER.fullmatch(character)}
    if refused:
        raise MemberError(f"Username: use letters, digits and . @ + - _ only ({_character_names(refused)} cannot "
                          "be used)", field="username")
    try:
        field.run_validators(username)  # any further rule of the user model
    except ValidationError as error:
        raise MemberError(f"Username: {' '.join(error.messages)}", field="username") from error
    # Case-insensitive, like Django's user creation form: "Erin" and "erin" would be two people in name only.
    taken = user_model.objects.filter(**{f"{user_model.USERNAME_FIELD}__iexact": username}).first()
    if taken is not None:
        raise MemberError(f"Username: {taken.get_username()!r} is taken; to give that user a role here, use "
                          "\"Add an existing user\"", field="username")
    return username


def _password_problem(error: ValidationError, password: str) -> str:
    """One of Django's password validators' refusals (settings.AUTH_PASSWORD_VALIDATORS) in the page's words; a
    validator this app does not know keeps its own message."""
    params = error.params if isinstance(error.params, dict) else {}
    if error.code == "password_too_short":
        return f"use at least {params.get('min_length')} characters (this one has {len(password)})"
    if error.code == "password_too_common":
        return "this is one of the passwords people use most, which are guessed first; choose another"
    if error.code == "password_entirely_numeric":
        return "use letters or other characters too, not digits alone"
    if error.code == "password_too_similar":
        return f"too close to the {params.get('verbose_name', 'user details')}; choose one that does not resemble it"
    return " ".join(error.messages)


def set_password_path(user: AbstractBaseUser) -> str:
    """Django's password-reset confirmation page for this user (valid PASSWORD_RESET_TIMEOUT, until used)."""
    return reverse(
        "password_reset_confirm",
        kwargs={"uidb64": urlsafe_base64_encode(force_bytes(user.pk)), "token": default_token_generator.make_token(user)},
    )


@transaction.atomic
def create_member(
    project: Project, username: str, *, role: str, email: str = "", password: str | None = None
) -> NewMember:
    """Create a user who is a member of this project.

    With ``password`` the user can log in at once; without it they get an unusable
    password and the returned set-password path, for the admin to pass on (no email is sent).
    """
    problems: dict[str, list[str]] = {}
    try:
        role = _role(role)
    except MemberError as error:
        problems["role"] = [str(error)]
    try:
        username = clean_username(username)
    except MemberError as error:
        problems["username"] = [str(error)]
        username = username.strip()  # still the best guess for the password's similarity check
    user_model = get_user_model()
    email = user_model.objects.normalize_email(email.strip())
    if email:
        try:
            validate_email(email)
        except ValidationError:
            problems["email"] = [f"Email: {email!r} is not an email address"]
    if password is not None:
        if not password:
            problems["password"] = ["Password: type a password, or invite the user to choose one"]
        else:
            try:
                validate_password(password, user_model(username=username, email=email))
            except ValidationError as error:
                problems["password"] = [f"Password: {_password_problem(item, password)}" for item in error.error_list]
    if problems:
        raise MemberError.of(problems)
    user = user_model.objects.create_user(username=username, email=email, password=password)
    membership = Membership.objects.create(project=project, user=user, role=role)
    return NewMember(membership, None if password is not None else set_password_path(user))


def invitation_path(membership: Membership) -> str:
    """A fresh set-password path for a member who has no password yet (invited, or imported from a file).

    Only for someone who belongs to this project alone and is not site staff: a project
    admin must not be able to take over an account that other projects rely on.
    """
    user = membership.user
    if user.has_usable_password():
        raise MemberError(f"{user.get_username()} already has a password: they log in with it")
    if user.is_staff or user.is_superuser:
        raise MemberError(f"{user.get_username()} is site staff; a site admin sets their password")
    if Membership.objects.filter(user=user).exclude(project_id=membership.project_id).exists():
        raise MemberError(
            f"{user.get_username()} belongs to other projects too; a site admin sets their password"
        )
    return set_password_path(user)


# --------------------------------------------------------------------------- members


def _open_assignments(project: Project, user: Any) -> list[Assignment]:
    return list(
        Assignment.objects.filter(batch__project=project, annotator=user)
        .exclude(status=Assignment.Status.SUBMITTED)
        .select_related("batch")
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


# --------------------------------------------------------------------------- batch duties


def assignment_work(assignment: Assignment) -> Work:
    """The work an unassign or reassign would take out of the figures, by the pages' done rule.

    Only open assignments get here (a submitted one must be re-opened first), and in an open one
    the rule counts exactly the samples marked done: a re-opened imported round holds its spans
    and no done marks, which is what stays stored and is named in the confirmation.
    """
    spans = SpanAnnotation.objects.filter(
        sample__batch_id=assignment.batch_id, annotator_id=assignment.annotator_id, round=assignment.round
    ).count()
    reviews = SampleReview.objects.filter(
        sample__batch_id=assignment.batch_id, annotator_id=assignment.annotator_id, round=assignment.round
    ).aggregate(n=Count("id"), done=Count("id", filter=Q(done=True)))
    done = progress.done_count(
        Sample.objects.filter(batch_id=assignment.batch_id).count(),
        reviewed=reviews["n"], reviewed_done=reviews["done"],
        submitted=assignment.status == Assignment.Status.SUBMITTED,
    )
    return Work(spans=spans, done=done)


def _locked(assignment: Assignment) -> Assignment:
    """The assignment read again under a row lock, so its status is the one the change is checked against."""
    fresh = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("batch__project", "annotator")
        .filter(pk=assignment.pk)
        .first()
    )
    if fresh is None:
        raise MemberError("This assignment was removed meanwhile; nothing was changed")
    return fresh


def _check_can_leave(assignment: Assignment, confirm: bool, verb: str) -> Work:
    name = assignment.annotator.get_username()
    if assignment.status == Assignment.Status.SUBMITTED:
        raise MemberError(
            f"{name} submitted {_describe(assignment)}; re-open the round before you {verb} them"
        )
    if assignment.round < RECONCILIATION_ROUND and Assignment.objects.filter(
        batch_id=assignment.batch_id, annotator_id=assignment.annotator_id, round=RECONCILIATION_ROUND
    ).exists():
        raise MemberError(
            f"Round 2 of {assignment.batch.name} builds on {name}'s round-1 spans; "
            "unassign them from round 2 first"
        )
    work = assignment_work(assignment)
    if work and not confirm:
        raise NeedsConfirmation(
            f"{name} has {work} in {_describe(assignment)}. If you {verb} them, that work stays "
            f"stored (exports list it) but counts in no agreement, results or curation figure, and {name} "
            "can no longer open the batch. Confirm to go ahead."
        )
    return work


@transaction.atomic
def unassign_annotator(assignment: Assignment, *, confirm: bool = False) -> Work:
    """Take a batch's round away from an annotator; returns the work that was left out of the figures."""
    assignment = _locked(assignment)
    work = _check_can_leave(assignment, confirm, "unassign")
    assignment.delete()
    return work


def _annotator_member(project: Project, user_id: Any) -> AbstractBaseUser:
    membership = (
        Membership.objects.filter(project=project, user_id=user_id, role=Role.ANNOTATOR).select_related("user").first()
        if str(user_id).isdigit()
        else None
    )
    if membership is None:
        raise MemberError(f"Annotator: choose one of the annotators of {project.name}")
    return membership.user


@transaction.atomic
def assign_annotator(batch: Batch, user_id: Any, *, round: int = 1) -> Assignment:
    """Give one annotator a batch's round (the batch page's form; the project page assigns several at once)."""
    user = _annotator_member(batch.project, user_id)
    if Assignment.objects.filter(batch=batch, annotator=user, round=round).exists():
        raise MemberError(f"{user.get_username()} is already assigned to {batch.name} round {round}")
    return Assignment.objects.create(batch=batch, annotator=user, round=round)


@transaction.atomic
def reassign_annotator(assignment: Assignment, to_user_id: Any, *, confirm: bool = False) -> Assignment:
    """Move a batch's round from one annotator to another, who starts it afresh.

    The first annotator's work is not handed over (spans are a person's judgement): it stays
    stored under their name, out of the figures, as with unassigning.
    """
    assignment = _locked(assignment)
    batch = assignment.batch
    if assignment.round == RECONCILIATION_ROUND:
        raise MemberError(
            "Round 2 reconciles each annotator's own round-1 spans and cannot move to someone else; unassign "
            "instead"
        )
    to_user = _annotator_member(batch.project, to_user_id)
    if to_user.pk == assignment.annotator_id:
        raise MemberError(f"{to_user.get_username()} already holds this assignment")
    if Assignment.objects.filter(batch=batch, annotator=to_user, round=assignment.round).exists():
        raise MemberError(
            f"{to_user.get_username()} is already assigned to {_describe(assignment)}"
        )
    _check_can_leave(assignment, confirm, "reassign")
    assignment.delete()
    return Assignment.objects.create(batch=batch, annotator=to_user, round=assignment.round)


def batch_staffing(batch: Batch) -> dict[str, Any]:
    """The batch page: each round's assignments with their work, and who else could take one."""
    total = batch.samples.count()
    spans = {
        (row["annotator_id"], row["round"]): row["n"]
        for row in SpanAnnotation.objects.filter(sample__batch=batch)
        .values("annotator_id", "round").annotate(n=Count("id")).order_by()
    }
    reviewed = {
        (row["annotator_id"], row["round"]): (row["n"], row["done"])
        for row in SampleReview.objects.filter(sample__batch=batch)
        .values("annotator_id", "round").annotate(n=Count("id"), done=Count("id", filter=Q(done=True))).order_by()
    }
    annotators = [
        membership.user
        for membership in Membership.objects.filter(project=batch.project, role=Role.ANNOTATOR)
        .select_related("user").order_by("user__username")
    ]
    rounds: dict[int, list[dict[str, Any]]] = {}
    for assignment in batch.assignments.select_related("annotator").order_by("round", "annotator__username"):
        key = (assignment.annotator_id, assignment.round)
        n, marked = reviewed.get(key, (0, 0))
        # The done rule of every other page: imported work is submitted without reviews.
        done = progress.done_count(
            total, reviewed=n, reviewed_done=marked, submitted=assignment.status == Assignment.Status.SUBMITTED
        )
        rounds.setdefault(assignment.round, []).append(
            {"assignment": assignment, "work": Work(spans=spans.get(key, 0), done=done)}
        )
    taken = {(row["assignment"].annotator_id, number) for number, rows in rounds.items() for row in rows}
    return {
        "total": total,
        "rounds": [
            {
                "number": number,
                "rows": rows,
                "others": [user for user in annotators if (user.pk, number) not in taken],
                # A later round is open: this one is frozen for everyone and cannot be re-opened.
                "superseded_by": max(rounds) if number < max(rounds) else None,
            }
            for number, rows in sorted(rounds.items())
        ],
        "unassigned_round_one": [user for user in annotators if (user.pk, 1) not in taken],
        "annotator_count": len(annotators),
    }

