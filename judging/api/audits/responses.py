"""What both topics of the audit API answer: a saved verdict as AuditResultSerializer describes it, and a refusal
from judging.services.audits as the status it carries (a change from a stale view with the saved verdict)."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.response import Response

from annotate.api.errors import field_error
from judging.models import Audit
from judging.services.audits import AuditError, VerdictChanged


def timestamp(value: Any) -> Any:
    """A time as DRF writes it, so an item's and a verdict's times read the same."""
    return serializers.DateTimeField().to_representation(value)


def refusal(error: AuditError) -> Response:
    """400, 403 and 404 as DRF's own errors (the field named on a 400); a 409 with its ``code``."""
    if error.status == 400:
        raise field_error(error.field, error.message)
    if error.status == 404:
        raise NotFound(error.message)
    if error.status == 403:
        raise PermissionDenied(error.message)
    if isinstance(error, VerdictChanged):  # a change from a stale view: the saved verdict comes back with it
        return Response({"detail": error.api_message, "code": error.code, "current": audit_result(error.current)},
                        status=error.status)
    return Response({"detail": error.message, "code": error.code}, status=error.status)


def audit_result(audit: Audit) -> dict[str, Any]:
    """A saved verdict as AuditResultSerializer describes it."""
    return {
        "id": audit.pk,
        "item": audit.item_id,
        "score": audit.score,
        "agreed": audit.agreed,
        "reasoning_wrong": audit.reasoning_wrong,
        "note": audit.note,
        "blind": audit.blind,
        "blind_score": audit.blind_score,
        "judgement": audit.judgement_id,
        "served_at": timestamp(audit.served_at),
        "answered_at": timestamp(audit.answered_at),
        "seconds": audit.seconds,
        "changed_at": timestamp(audit.changed_at) if audit.changed_at is not None else None,
    }
