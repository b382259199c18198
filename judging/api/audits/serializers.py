"""The audit API's serializers, which are also its OpenAPI schema: what an item shows (each judge's panel, the
quoted passages, the auditor's progress), the verdict sent and the saved verdict answered, and the 409 body; with
the 403 answer both topics give a role that does not audit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

from annotate.api.serializers import ErrorSerializer
from annotate.api.validation import RejectsUnknownFields
from judging.models import Judgement
from judging.services.audits import MAX_NOTE


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

    read_only_reasons: ClassVar[dict[str, str]] = {
        "changed_at": "the server sets it; send the changed_at you read as base_changed_at to have a change made "
        "meanwhile refused rather than overwritten",
    }

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
    base_changed_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="The saved verdict you changed: its changed_at as GET (or the last PUT or PATCH) answered it, null "
        "when it was never changed. If it was changed since (another tab, browser or client), nothing is changed and "
        "the answer is 409 (changed_since) with the saved verdict as `current`; a change that leaves the saved "
        "verdict as it is (a retry) is answered 200 all the same. Leave it out to write without the check.",
    )

    def to_internal_value(self, data: Any) -> Any:
        # A form body's missing boolean reads as false in DRF: for a full replacement that is a missing field too.
        missing = {} if self.partial or not isinstance(data, Mapping) else {
            name: [field.error_messages["required"]] for name, field in self.fields.items()
            if field.required and name not in data
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
        "auditor then agreed or chose another score, and whether the verdict was sent by the page or this API; null "
        "when none was given blind.",
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
        choices=["already_audited", "not_served", "nothing_to_agree", "not_answered", "changed_since"],
        help_text="already_audited: you gave another verdict on this item before (change it with PATCH or PUT "
        "/api/audits/{id}/; the same verdict again is a retry, answered 200); "
        "not_served: ask for your next item first; nothing_to_agree: the shown answer has no 1-5 score (a failure, "
        "or an NLI probability); not_answered: the audit holds no verdict yet, so there is nothing to change; "
        "changed_since (PUT and PATCH only): the saved verdict changed after the one base_changed_at names.",
    )
    current = AuditResultSerializer(
        required=False,
        help_text="With changed_since only (PUT and PATCH /api/audits/{id}/): the saved verdict as it is now. Send "
        "your change again with its changed_at as base_changed_at to apply it over this one.",
    )


FOR_AUDITORS = OpenApiResponse(
    ErrorSerializer, description="Only the project's auditors and admins audit (annotators work blind and never see judges)."
)
