"""One's own saved verdict by the API (GET/PUT/PATCH /api/audits/<id>/): read it, replace it whole or change some
of its fields (the audit page's ``u``); never another auditor's (403). A change keeps ``answered_at`` and
``seconds`` from the first answer and sets ``changed_at``, which is also the verdict's version: a PUT or PATCH that
sends ``base_changed_at`` (the changed_at it read, null for never changed) is refused with 409 changed_since and the
saved verdict as ``current`` when it changed since, say in another tab; one without it writes unchecked. The first
verdict: judging.api.audits.queue.
"""

from __future__ import annotations

from typing import Any

from django.urls import re_path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.schema import id_in_path
from annotate.api.serializers import MAX_ID, ErrorSerializer
from judging import access
from judging.api.audits.responses import audit_result, refusal
from judging.api.audits.serializers import AuditChangeSerializer, AuditConflictSerializer, AuditResultSerializer
from judging.models import Audit
from judging.services import audits
from judging.services.audits import AuditError

NOT_YOURS = OpenApiResponse(
    ErrorSerializer, description="Another auditor's verdict (you read and change only your own), or a role that does "
    "not audit.",
)
NO_AUDIT = OpenApiResponse(ErrorSerializer, description="No such audit in a project of yours.")
CHANGE_CONFLICT = OpenApiResponse(
    AuditConflictSerializer,
    description="Nothing was changed: the saved verdict changed after the one base_changed_at names (changed_since: "
    "`current` holds it, and `detail` says when; send your change again with its changed_at to apply it over "
    "it), the audit holds no verdict yet (not_answered), or you agreed with an answer that has no 1-5 score "
    "(nothing_to_agree).",
)


class AuditChangeView(APIView):
    """One's own saved verdict: read it (GET), replace it (PUT) or change some of it (PATCH).

    Whose audit is decided first, from the id alone: an outsider gets 404 and another auditor (an admin included) or
    an annotator 403 whatever they send, so a malformed body tells them nothing more than a valid one.
    """

    @extend_schema(
        parameters=[id_in_path("audit")],
        responses={
            200: AuditResultSerializer,
            403: NOT_YOURS,
            404: NO_AUDIT,
            409: OpenApiResponse(
                AuditConflictSerializer,
                description="The audit holds no verdict yet (not_answered): answer its item first.",
            ),
        },
    )
    def get(self, request: Request, id: str) -> Response:
        """Your own saved verdict, as PUT and PATCH answer it: read it before changing it."""
        found = _own_audit(request, id)
        try:
            audit = audits.own_answered_audit(found.item.project, request.user, found.pk)
        except AuditError as error:
            return refusal(error)
        return Response(audit_result(audit))

    @extend_schema(
        parameters=[id_in_path("audit")],
        request=AuditChangeSerializer,
        responses={200: AuditResultSerializer, 403: NOT_YOURS, 404: NO_AUDIT, 409: CHANGE_CONFLICT},
    )
    def put(self, request: Request, id: str) -> Response:
        """Replace your own saved verdict: send every field (`score` null when you agree); a body without one is
        400 naming each missing field, and nothing changes. To change some fields only, use PATCH.

        `answered_at` and `seconds` stay the first answer's, `changed_at` says when it changed, `blind_score` stays
        and `blind` is again whether the final score is it; a verdict sent as it is saved changes nothing
        (`changed_at` included).

        Send `base_changed_at` (the `changed_at` you read; null: never changed) so that a change made meanwhile
        elsewhere (another tab, browser or client) is not overwritten unseen: then 409 changed_since with the saved
        verdict as `current`, nothing changed. Without it the verdict is written unchecked."""
        found = _own_audit(request, id)
        body = AuditChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        verdict = body.validated_data
        try:
            audit = audits.change_audit(
                found.item.project, request.user, found.pk,
                score=verdict["score"], agreed=verdict["agreed"],
                reasoning_wrong=verdict["reasoning_wrong"], note=verdict["note"], seen=_seen(verdict),
            )
        except AuditError as error:
            return refusal(error)
        return Response(audit_result(audit))

    @extend_schema(
        parameters=[id_in_path("audit")],
        request=AuditChangeSerializer,
        responses={200: AuditResultSerializer, 403: NOT_YOURS, 404: NO_AUDIT, 409: CHANGE_CONFLICT},
    )
    def patch(self, request: Request, id: str) -> Response:
        """Change some fields of your own saved verdict: only those sent change, the others stay as saved.

        `agreed` true takes the shown judge's score again; a new score alone beside a saved agreement is 400 (send
        `agreed` false with it). Otherwise as PUT: the same checks, `changed_at` and `blind` the same way, a
        change that changes nothing writes nothing, and `base_changed_at` guards against a change made meanwhile
        (409 changed_since with `current`; without it, a field you send replaces a value changed meanwhile that you
        never saw)."""
        found = _own_audit(request, id)
        body = AuditChangeSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        changes = dict(body.validated_data)
        seen = _seen(changes)
        changes.pop("base_changed_at", None)
        try:
            audit = audits.amend_audit(found.item.project, request.user, found.pk, seen=seen, **changes)
        except AuditError as error:
            return refusal(error)
        return Response(audit_result(audit))


def _seen(body: dict[str, Any]) -> audits.VerdictSeen | None:
    """The version the change was made from: base_changed_at as sent (null: never changed), or None (not sent)."""
    if "base_changed_at" not in body:
        return None
    return body["base_changed_at"] or audits.UNCHANGED


def _own_audit(request: Request, id: str) -> Audit:
    """The caller's own audit by the id in the path: 404 for a number no audit can have, and access's 404 or 403."""
    audit_id = int(id)
    if not 1 <= audit_id <= MAX_ID:
        raise NotFound("No such audit")
    return access.get_own_audit(request.user, audit_id)


# Audit ids as [0-9]{1,18}, like the other APIs': a longer number names no object (404, not 500).
urlpatterns = [
    re_path(r"^audits/(?P<id>[0-9]{1,18})/$", AuditChangeView.as_view(), name="api-audit-change"),
]
