"""The audit queue's API (the project's auditors and admins): the next flagged output with every judge's answer,
and the auditor's verdict on it.

Same rules as the audit page (judging.services.audits serves and records for both): outsiders 404, annotators
403 (they work blind and never see judges), anonymous callers 401; a pairs project 400 on ``project`` to its
members (judging.api.lookups). The API has no blind mode: a client that wants its auditor's own score first
simply asks for it before showing ``judges`` (a verdict sent here has no ``blind_score``).

An item is answered once (POST; a second verdict is 409, the same verdict sent again a retry answered 200 with the
saved one, nothing changed); the auditor reads their own saved verdict with GET on the audit
and changes it afterwards (the page's ``u``) with PUT (the whole verdict: every field required) or PATCH (the
fields sent), never another auditor's (403). A change keeps ``answered_at`` and ``seconds`` from the first answer
and sets ``changed_at``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.urls import path, re_path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate.api.errors import field_error
from annotate.api.schema import id_in_path
from annotate.api.serializers import MAX_ID, ErrorSerializer
from annotate.api.validation import RejectsUnknownFields
from annotate.models import Project
from judging import access
from judging.api.lookups import NOT_A_SPAN_PROJECT, span_project_lookup
from judging.models import Audit, Judgement
from judging.services import audits
from judging.services.audits import MAX_NOTE, AuditError

# --------------------------------------------------------------------------- serializers (also the OpenAPI schema)


class QuoteSerializer(serializers.Serializer):
    quote = serializers.CharField(help_text="The passage as the reasoning quotes it (without its quote marks).")
    index = serializers.IntegerField(help_text="Which quote of this reasoning, from 0.")
    where = serializers.ChoiceField(
        choices=["source", "output"], allow_null=True,
        help_text="The text it was found in (case and white space ignored); null: found in neither text.",
    )
    start = serializers.IntegerField(allow_null=True, help_text="Where it starts in that text (code points).")
    end = serializers.IntegerField(allow_null=True, help_text="Where it ends in that text (code points, exclusive).")
    reasoning_start = serializers.IntegerField(help_text="Where the quote stands in the reasoning (code points).")
    reasoning_end = serializers.IntegerField()


class JudgePanelSerializer(serializers.Serializer):
    judge_id = serializers.IntegerField()
    judge = serializers.CharField(help_text="The judge's name.")
    kind = serializers.ChoiceField(choices=["rubric", "nli", "imported"])
    mode = serializers.CharField(help_text='"reasoning", "score only", or the kind for NLI and imported judges.')
    judgement_id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=Judgement.Status.values)
    score = serializers.IntegerField(allow_null=True, help_text="1-5; null unless status is ok (never guessed).")
    probability = serializers.FloatField(allow_null=True, help_text="NLI judges: P(consistent), max over windows.")
    display_score = serializers.FloatField(
        allow_null=True, help_text="The score, or 1 + 4p for an NLI judge (our scaling; the paper gives no formula)."
    )
    label = serializers.CharField(allow_null=True, help_text='The score\'s label, e.g. "very faithful".')
    score_text = serializers.CharField(help_text='As the page prints it: "4 · very faithful", "p = 0.412 · 1 + 4p = 2.65".')
    reasoning = serializers.CharField(allow_blank=True)
    raw = serializers.CharField(allow_blank=True, help_text="Parse errors: the judge's raw answer; else empty.")
    error = serializers.CharField(allow_blank=True, help_text="Why the answer is a parse error or an error.")
    quotes = QuoteSerializer(many=True, help_text="The passages the reasoning quotes, one entry per occurrence.")
    shown = serializers.BooleanField(help_text="The answer `agreed` takes the score of.")
    explainer = serializers.BooleanField()
    first_pass = serializers.BooleanField()


class AuditProgressSerializer(serializers.Serializer):
    answered = serializers.IntegerField(help_text="Your verdicts in the project.")
    left = serializers.IntegerField(help_text="Flagged outputs still open to you, the one served to you included.")
    items = serializers.IntegerField(help_text="Outputs in the project's audit queue.")
    complete = serializers.IntegerField(help_text="Outputs with all their audits answered.")
    audits_per_item = serializers.IntegerField()


class AuditItemSerializer(serializers.Serializer):
    item = serializers.IntegerField(help_text="The audit item's id: send the verdict to /api/audit-items/{item}/audits/.")
    sample = serializers.IntegerField()
    external_id = serializers.CharField(allow_blank=True)
    generator = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True, help_text="Why it was flagged.")
    source = serializers.CharField(allow_blank=True)
    output = serializers.CharField(allow_blank=True)
    sentences = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField(min_value=0), min_length=2, max_length=2),
        help_text="The output's sentences, [start, end) in code points.",
    )
    sentence_scores = serializers.ListField(
        child=serializers.FloatField(allow_null=True), allow_null=True,
        help_text="The first pass's figure per output sentence (p or a 1-5 score), where it gave them; else null.",
    )
    served_at = serializers.DateTimeField(
        help_text="The time per item counts from here: when the server served it to you, moved forward by the time "
        "spent meanwhile changing saved verdicts on the audit page (that time counts for no item)."
    )
    shown_judgement = serializers.IntegerField(
        allow_null=True, help_text="The judgement whose score `agreed` takes (the explainer's, else the first pass's)."
    )
    agree_score = serializers.IntegerField(allow_null=True, help_text="The score agreeing gives; null: nothing to agree with.")
    judges = JudgePanelSerializer(many=True, help_text="Each judge's latest answer on this output, the shown one first.")
    progress = AuditProgressSerializer()


class AuditRequestSerializer(RejectsUnknownFields):
    score = serializers.IntegerField(
        min_value=1, max_value=5, required=False, allow_null=True,
        help_text="Your score 1-5; required unless `agreed` (then it may be left out, or must equal the judge's).",
    )
    agreed = serializers.BooleanField(default=False, help_text="Take the shown judge's score as yours.")
    reasoning_wrong = serializers.BooleanField(default=False)
    note = serializers.CharField(max_length=MAX_NOTE, required=False, allow_blank=True, default="", trim_whitespace=False)


def _replaced(name: str, what: str) -> str:
    return (f"{name} is required: PUT replaces the whole verdict, so send {what} (its saved value to keep it), or "
            f"change only some fields with PATCH; nothing was changed")


class AuditChangeSerializer(RejectsUnknownFields):
    """A saved verdict: PUT sends every field, PATCH only those that change."""

    score = serializers.IntegerField(
        min_value=1, max_value=5, allow_null=True,
        error_messages={"required": _replaced("score", "your score 1-5, or null when you agree")},
        help_text="Your score 1-5; null (or the judge's score) when `agreed`.",
    )
    agreed = serializers.BooleanField(
        error_messages={"required": _replaced("agreed", "true or false")},
        help_text="Take the score of the judge's answer you were shown at the first answer.",
    )
    reasoning_wrong = serializers.BooleanField(error_messages={"required": _replaced("reasoning_wrong", "true or false")})
    note = serializers.CharField(
        max_length=MAX_NOTE, allow_blank=True, trim_whitespace=False,
        error_messages={"required": _replaced("note", 'the note ("" for none)')},
    )

    def to_internal_value(self, data: Any) -> Any:
        # A form body's missing boolean reads as false in DRF: for a full replacement that is a missing field too.
        missing = {} if self.partial or not isinstance(data, Mapping) else {
            name: [field.error_messages["required"]] for name, field in self.fields.items() if name not in data
        }
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as error:
            if missing and isinstance(error.detail, dict):
                raise serializers.ValidationError({**error.detail, **missing}) from None
            raise
        if missing:
            raise serializers.ValidationError(missing)
        return value


class AuditResultSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    item = serializers.IntegerField()
    score = serializers.IntegerField()
    agreed = serializers.BooleanField()
    reasoning_wrong = serializers.BooleanField()
    note = serializers.CharField(allow_blank=True)
    blind = serializers.BooleanField(
        help_text="The final score is the one given before the judge's answer was revealed (the page's blind mode)."
    )
    blind_score = serializers.IntegerField(
        allow_null=True,
        help_text="The score given before the judge's answer was revealed (the page's blind mode), kept when the "
        "auditor then agreed or chose another score; null when none was given blind (always, for verdicts sent "
        "through this API).",
    )
    judgement = serializers.IntegerField(allow_null=True, help_text="The judge's answer you were shown.")
    served_at = serializers.DateTimeField()
    answered_at = serializers.DateTimeField(help_text="The first verdict's time; a change leaves it.")
    seconds = serializers.FloatField(
        allow_null=True,
        help_text="Server-measured: from serving the item to receiving the first verdict, less the time spent meanwhile "
        "changing saved verdicts on the audit page (a change leaves it); null when not known (the server clock went "
        "back in between).",
    )
    changed_at = serializers.DateTimeField(
        allow_null=True, help_text="When the saved verdict was last changed; null: never changed."
    )


class AuditConflictSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="What happened, for a person to read; nothing was changed.")
    code = serializers.ChoiceField(
        choices=["already_audited", "not_served", "nothing_to_agree", "not_answered"],
        help_text="already_audited: you gave another verdict on this item before (change it with PATCH or PUT "
        "/api/audits/{id}/; the same verdict again is a retry, answered 200); "
        "not_served: ask for your next item first; nothing_to_agree: the shown answer has no 1-5 score (a failure, "
        "or an NLI probability); not_answered: the audit holds no verdict yet, so there is nothing to change.",
    )


FOR_AUDITORS = OpenApiResponse(
    ErrorSerializer, description="Only the project's auditors and admins audit (annotators work blind and never see judges)."
)


# --------------------------------------------------------------------------- views


def _timestamp(value: Any) -> Any:
    return serializers.DateTimeField().to_representation(value)


def item_to_audit(audit: Audit, progress: dict[str, int]) -> dict[str, Any]:
    item = audit.item
    sample = item.sample
    latest = audits.latest_sample_judgements(sample)
    panels = audits.judge_panels(item, latest=latest)
    shading = audits.sentence_shading(item, latest)
    sentence_scores = None
    if shading is not None and shading["mismatch"] is None:
        sentences = audits.output_sentences(sample)
        sentence_scores = [
            float(shading["sentences"][index]["figure"]) if index in shading["sentences"] else None
            for index in range(len(sentences))
        ]
    shown = audit.judgement
    return {
        "item": item.pk,
        "sample": sample.pk,
        "external_id": sample.external_id,
        "generator": sample.generator,
        "reason": item.reason,
        "source": sample.passage.text,
        "output": sample.summary,
        "sentences": audits.output_sentences(sample),
        "sentence_scores": sentence_scores,
        "served_at": _timestamp(audit.served_at),
        "shown_judgement": shown.pk if shown is not None else None,
        "agree_score": shown.score if shown is not None else None,
        "judges": [{key: panel[key] for key in JudgePanelSerializer().fields} for panel in panels],
        "progress": progress,
    }


def _refusal(error: AuditError) -> Response:
    if error.status == 400:
        raise field_error(error.field, error.message)
    if error.status == 404:
        raise NotFound(error.message)
    if error.status == 403:
        raise PermissionDenied(error.message)
    return Response({"detail": error.message, "code": error.code}, status=error.status)


class NextAuditView(APIView):
    @extend_schema(
        responses={
            200: AuditItemSerializer,
            204: OpenApiResponse(description="Nothing is left for you to audit in this project now."),
            400: NOT_A_SPAN_PROJECT,
            403: FOR_AUDITORS,
            404: OpenApiResponse(ErrorSerializer, description="No such span project among yours."),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        """Your next flagged output, worst first: the same one until you answer it; never one you audited."""
        project, _ = span_project_lookup(access.get_project_for_auditor, request.user, slug)
        try:
            audit = audits.serve_next_audit(project, request.user)
        except AuditError as error:
            return _refusal(error)
        if audit is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(item_to_audit(audit, audits.audit_progress(project, request.user)))


class AuditVerdictView(APIView):
    @extend_schema(
        parameters=[id_in_path("audit item")],
        request=AuditRequestSerializer,
        responses={
            200: OpenApiResponse(
                AuditResultSerializer,
                description="A retry: you sent this verdict for this item already and it is your saved verdict. "
                "Nothing was changed (its `answered_at`, `seconds` and `changed_at` included); the body is the "
                "saved verdict, as the 201 gave it.",
            ),
            201: OpenApiResponse(AuditResultSerializer, description="Your verdict was recorded."),
            403: FOR_AUDITORS,
            404: OpenApiResponse(ErrorSerializer, description="No such audit item in a project of yours."),
            409: OpenApiResponse(
                AuditConflictSerializer,
                description="Nothing was recorded: you audited this item already with another verdict (change it with "
                "PATCH or PUT /api/audits/{id}/), it was not served to you (or your serve "
                "expired and went to another auditor), or you "
                "agreed with an answer that has no 1-5 score (see code).",
            ),
        },
    )
    def post(self, request: Request, id: str) -> Response:
        """Your verdict on the item served to you: a score 1-5, or agreed (the shown judge's score); once (change it
        afterwards with PATCH or PUT /api/audits/{id}/).

        Safe to retry: the same verdict sent again answers 200 with the saved one and changes nothing, so a client
        whose connection dropped after the verdict was recorded learns that it was."""
        item_id = int(id)
        if not 1 <= item_id <= MAX_ID:
            raise NotFound("No such audit item")
        # Who may audit first: an outsider's or an annotator's malformed verdict gets their 404 or 403, not a 400.
        item = access.get_audit_item_for_auditor(request.user, item_id)
        project: Project = item.project
        body = AuditRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        verdict = body.validated_data
        try:
            audit, recorded = audits.submit_audit_retry(
                project, request.user, item.pk,
                score=verdict.get("score"), agreed=verdict["agreed"],
                reasoning_wrong=verdict["reasoning_wrong"], note=verdict.get("note", ""),
            )
        except AuditError as error:
            return _refusal(error)
        return Response(audit_result(audit), status=status.HTTP_201_CREATED if recorded else status.HTTP_200_OK)


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
        "served_at": _timestamp(audit.served_at),
        "answered_at": _timestamp(audit.answered_at),
        "seconds": audit.seconds,
        "changed_at": _timestamp(audit.changed_at) if audit.changed_at is not None else None,
    }


NOT_YOURS = OpenApiResponse(
    ErrorSerializer, description="Another auditor's verdict (you read and change only your own), or a role that does "
    "not audit.",
)
NO_AUDIT = OpenApiResponse(ErrorSerializer, description="No such audit in a project of yours.")
CHANGE_CONFLICT = OpenApiResponse(
    AuditConflictSerializer,
    description="Nothing was changed: the audit holds no verdict yet (not_answered), or you agreed with an answer "
    "that has no 1-5 score (nothing_to_agree).",
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
            return _refusal(error)
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
        (`changed_at` included)."""
        found = _own_audit(request, id)
        body = AuditChangeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        verdict = body.validated_data
        try:
            audit = audits.change_audit(
                found.item.project, request.user, found.pk,
                score=verdict["score"], agreed=verdict["agreed"],
                reasoning_wrong=verdict["reasoning_wrong"], note=verdict["note"],
            )
        except AuditError as error:
            return _refusal(error)
        return Response(audit_result(audit))

    @extend_schema(
        parameters=[id_in_path("audit")],
        request=AuditChangeSerializer,
        responses={200: AuditResultSerializer, 403: NOT_YOURS, 404: NO_AUDIT, 409: CHANGE_CONFLICT},
    )
    def patch(self, request: Request, id: str) -> Response:
        """Change some fields of your own saved verdict: only those sent change, the others stay as saved.

        `agreed` true takes the shown judge's score again; a new score alone beside a saved agreement is 400 (send
        `agreed` false with it). Otherwise as PUT: the same checks, `changed_at` and `blind` the same way, and a
        change that changes nothing writes nothing."""
        found = _own_audit(request, id)
        body = AuditChangeSerializer(data=request.data, partial=True)
        body.is_valid(raise_exception=True)
        try:
            audit = audits.amend_audit(found.item.project, request.user, found.pk, **body.validated_data)
        except AuditError as error:
            return _refusal(error)
        return Response(audit_result(audit))


def _own_audit(request: Request, id: str) -> Audit:
    """The caller's own audit by the id in the path: 404 for a number no audit can have, and access's 404 or 403."""
    audit_id = int(id)
    if not 1 <= audit_id <= MAX_ID:
        raise NotFound("No such audit")
    return access.get_own_audit(request.user, audit_id)


# Item ids as [0-9]{1,18}, like the other APIs': a longer number names no object (404, not 500).
urlpatterns = [
    path("projects/<slug:slug>/audit/next/", NextAuditView.as_view(), name="api-audit-next"),
    re_path(r"^audit-items/(?P<id>[0-9]{1,18})/audits/$", AuditVerdictView.as_view(), name="api-audit-verdict"),
    re_path(r"^audits/(?P<id>[0-9]{1,18})/$", AuditChangeView.as_view(), name="api-audit-change"),
]
