"""What the members services share: the errors they raise, the work an assignment holds, role names."""

from __future__ import annotations

import re
from dataclasses import dataclass

from annotate.models import Assignment, Membership

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


