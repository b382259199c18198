"""Who audits (a project's auditors and admins), the refusal every audit service raises, and the project's
triage settings the queue and the page read."""


from __future__ import annotations

from typing import Any

from annotate.access import role_in
from annotate.models import Membership, Project
from judging.models import JudgingSettings

AUDITOR_ROLES = (Membership.Role.ADMIN, Membership.Role.AUDITOR)


class AuditError(Exception):
    """An audit refused; nothing was changed. ``status`` is the HTTP answer (400, 403, 404 or 409), ``code``
    names the refusal for API clients, ``field`` the input at fault (400)."""

    def __init__(self, message: str, *, status: int = 409, code: str = "", field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field


def judging_settings_of(project: Project) -> JudgingSettings:
    """The project's triage settings, or their defaults when none were saved (read only: a page view writes nothing)."""
    return JudgingSettings.objects.filter(project=project).first() or JudgingSettings(project=project)


def check_auditor(project: Project, auditor: Any) -> None:
    if role_in(auditor, project) not in AUDITOR_ROLES:
        raise AuditError("Only the project's auditors and admins audit judge scores", status=403, code="not_an_auditor")
