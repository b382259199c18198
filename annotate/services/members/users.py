"""New users: usernames, passwords and the invitation (set-password) link."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from annotate.models import Membership, Project
from annotate.services.members.common import USERNAME_CHARACTER, MemberError, NewMember, _role


def _character_names(characters: set[str]) -> str:
    return ", ".join("spaces" if character.isspace() else repr(character) for character in sorted(characters))


def clean_username(username: str, project: Project | None = None) -> str:
    """The username as it will be stored, or MemberError naming what is wrong with it in the page's words. A name
    taken (in any case) by a member of ``project`` says so: adding them again is no remedy."""
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
    membership = Membership.objects.filter(project=project, user=taken).first() if project and taken else None
    if membership is not None:
        spelled = "" if taken.get_username() == username else (
            f" (usernames are compared ignoring case, so {username!r} is that name)")
        raise MemberError(f"Username: {taken.get_username()!r} is already a member of this project, as "
                          f"{membership.role}{spelled}", field="username")
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
        username = clean_username(username, project)
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


