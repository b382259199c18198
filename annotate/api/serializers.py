from __future__ import annotations

from typing import Any

from rest_framework import serializers

from annotate.api.validation import QueryParamsSerializer, RejectsUnknownFields, StrictBooleanField
from annotate.models import Assignment, Batch, GoldLabel, Membership, Project, Sample

# Ranges of the numbers the API reads: what the columns hold (SQLite cannot even compare a bigger
# number). Object ids in paths match [0-9]{1,18} (the viewsets' lookup_value_regex): a longer number names no object.
MAX_ID = 10**18 - 1
MAX_ROUND = 32767  # PositiveSmallIntegerField
MAX_VERSION = 2147483647  # PositiveIntegerField

# Roles that see what annotators must not (detector outputs, metadata, the generator's name).
SEES_METADATA = frozenset({Membership.Role.ADMIN, Membership.Role.AUDITOR, Membership.Role.CURATOR})


class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["slug", "name", "kind", "taxonomy", "annotators_per_batch", "guidelines", "role"]

    def get_role(self, project: Project) -> str | None:
        return self.context.get("roles", {}).get(project.pk)


class BatchSerializer(serializers.ModelSerializer):
    class Meta:
        model = Batch
        fields = ["id", "name", "is_pilot", "position"]


class SampleSerializer(serializers.ModelSerializer):
    source = serializers.CharField(source="passage.text", read_only=True)
    source_sentences = serializers.JSONField(source="passage.sentences", read_only=True)
    summary_sentences = serializers.JSONField(source="sentences", read_only=True)
    batch = serializers.CharField(
        source="batch.name", read_only=True,
        help_text="The batch's name. The list's ?batch= filter takes the batch's id: batch_id.",
    )
    batch_id = serializers.IntegerField(read_only=True, help_text="The batch's id, what ?batch= filters by.")
    project = serializers.CharField(source="project.slug", read_only=True)
    generator = serializers.CharField(
        read_only=True, allow_null=True,
        help_text="The model that wrote the summary; \"\" when the sample names none. null: hidden from you (an "
        "annotator of a project that keeps generators blind; its admins may reveal them in the project's settings).",
    )

    class Meta:
        model = Sample
        fields = [
            "id", "project", "batch", "batch_id", "external_id", "generator", "summary", "source",
            "summary_sentences", "source_sentences", "metadata",
        ]

    def to_representation(self, sample: Sample) -> dict:
        """Annotators work blind: no detector outputs or other metadata, no generator unless the project shows it.

        ``context["roles"]`` maps project ids to the viewer's role; a project missing
        there counts as an annotator's, so a forgotten context hides rather than leaks.
        """
        data = super().to_representation(sample)
        role = self.context.get("roles", {}).get(sample.project_id)
        if role not in SEES_METADATA:
            data["metadata"] = {}
            if not sample.project.reveal_generator:
                data["generator"] = None  # not "": that is a sample whose generator is empty
        return data


# A span as the API shows it (read-only). Declared field by field rather than as a
# ModelSerializer, which rebuilds its fields from the model for every instance
# (~0.25 ms, a tenth of a span save's CPU; docs/performance.md, 2). Same fields and
# schema. (A comment, not a docstring, which would become the schema's description.)
class SpanSerializer(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    sample = serializers.IntegerField(source="sample_id", read_only=True)
    annotator = serializers.CharField(source="annotator.username", read_only=True)
    round = serializers.IntegerField(read_only=True)
    start = serializers.IntegerField(read_only=True)
    end = serializers.IntegerField(read_only=True)
    text = serializers.CharField(read_only=True)
    labels = serializers.JSONField(read_only=True)
    note = serializers.CharField(read_only=True)
    source_start = serializers.IntegerField(read_only=True, allow_null=True)
    source_end = serializers.IntegerField(read_only=True, allow_null=True)
    source_text = serializers.CharField(read_only=True, allow_null=True)
    version = serializers.IntegerField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)
    assigned = serializers.SerializerMethodField(
        help_text="Whether the span's annotator still holds this round of the sample's batch. False for a span of "
        "someone unassigned or reassigned since: it stays stored and listed (exports list it too) but counts in no "
        "figure, round 2 or curation."
    )

    def get_assigned(self, span: Any) -> bool:
        known = getattr(span, "assigned", None)  # access.with_assigned reads it with the span
        if known is not None:
            return bool(known)
        return Assignment.objects.filter(
            batch__samples__id=span.sample_id, annotator_id=span.annotator_id, round=span.round
        ).exists()


# What a client sends but may not set, with why; shared by the create and the edit.
SPAN_READ_ONLY: dict[str, str] = {
    "id": "the server numbers spans",
    "annotator": "a span belongs to whoever saved it",
    "text": "it follows start and end, send those",
    "source_text": "it follows source_start and source_end, send those",
    "version": "the server counts versions",
    "updated_at": "the server sets it on each save",
}


class SpanWriteSerializer(RejectsUnknownFields):
    """Shape of a new span; values are checked by the service, which names the bad field."""

    read_only_reasons = SPAN_READ_ONLY

    sample = serializers.IntegerField(max_value=MAX_ID)
    round = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ROUND)
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    labels = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField(required=False, allow_blank=True, default="")
    source_start = serializers.IntegerField(required=False, allow_null=True, default=None)
    source_end = serializers.IntegerField(required=False, allow_null=True, default=None)


class SpanUpdateSerializer(RejectsUnknownFields):
    """The version you last read and only the fields to change; any other field is refused with 400."""

    read_only_reasons = {
        **SPAN_READ_ONLY,
        "sample": "a span stays on its sample; delete it and save a new one on the other sample",
        "round": "a span stays in its round; save a new one in the other round",
    }

    required_when_partial = {"version": "send the version you last read"}

    version = serializers.IntegerField(min_value=1, max_value=MAX_VERSION)
    start = serializers.IntegerField(required=False)
    end = serializers.IntegerField(required=False)
    labels = serializers.ListField(child=serializers.CharField(), required=False)
    note = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    source_start = serializers.IntegerField(required=False, allow_null=True)
    source_end = serializers.IntegerField(required=False, allow_null=True)


class SpanListQuerySerializer(QueryParamsSerializer):
    """The span list's filters; the list holds the spans you may see (your own; every span of a project you
    administer, audit or curate), and the filters narrow it. A project or sample you may not see answers 404."""

    project = serializers.CharField(required=False, max_length=100, help_text="Only this project's spans (its slug).")
    sample = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID, help_text="Only this sample's "
                                      "spans (its id).")
    round = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ROUND, help_text="Only this "
                                     "round's spans: 1, or 2 for reconciliation.")


class SimilarityRequestSerializer(RejectsUnknownFields):
    side = serializers.ChoiceField(choices=["summary", "source"])
    start = serializers.IntegerField(min_value=0)
    end = serializers.IntegerField(min_value=0)


class ReviewSerializer(RejectsUnknownFields):
    round = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ROUND)
    done = StrictBooleanField(help_text="true: done (no span = consistent); false: not done. No other value.")
    seconds = serializers.IntegerField(default=0, min_value=0, max_value=86400)


class TimeSpentSerializer(RejectsUnknownFields):
    round = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ROUND)
    seconds = serializers.IntegerField(
        min_value=0, max_value=86400,
        help_text="Seconds of one visit to the sample, added to the time spent on it; nothing else changes.",
    )


class TimeRefusedSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why nothing was stored, for a person to read.")
    frozen = serializers.BooleanField(help_text="True: the round is frozen, so its times are final.")


class SubmitRoundSerializer(RejectsUnknownFields):
    round = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ROUND)


class SubmittedRoundSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    round = serializers.IntegerField()
    status = serializers.CharField(help_text="`submitted`: the round is submitted and frozen again.")
    submitted_at = serializers.DateTimeField()


class SubmitConflictSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why the round was not submitted, for a person to read.")
    frozen = serializers.BooleanField(required=False, help_text="True when the round is frozen already.")
    not_done = serializers.ListField(
        child=serializers.IntegerField(), required=False,
        help_text="The samples (ids) not marked done: mark them done first. Absent for the other refusals.",
    )


class RoundTwoRequestSerializer(RejectsUnknownFields):
    reveal = serializers.ChoiceField(
        choices=["names", "pseudonyms"], default="names",
        help_text="How round 2 shows each annotator the others' round-1 work: under their usernames, or under the "
        "project's pseudonyms (as in exports).",
    )


class RoundTwoOpenedSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    round = serializers.IntegerField(help_text="2.")
    reveal = serializers.CharField(help_text="`names` or `pseudonyms`, as sent.")
    annotators = serializers.ListField(
        child=serializers.CharField(),
        help_text="The round-1 annotators, each now assigned round 2 with copies of their round-1 spans.",
    )


class ReopenRequestSerializer(RejectsUnknownFields):
    annotator = serializers.CharField(help_text="The username of the annotator whose round is re-opened.")
    round = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ROUND)
    reason = serializers.CharField(
        allow_blank=True, trim_whitespace=False,
        help_text="Why the round is re-opened (at most 2000 characters); it is kept in the log.",
    )


class ReopenedRoundSerializer(serializers.Serializer):
    batch = serializers.IntegerField()
    round = serializers.IntegerField()
    annotator = serializers.CharField()
    status = serializers.CharField(help_text="`assigned`: open to them until they submit it again.")
    reopened = serializers.BooleanField()
    reason = serializers.CharField()
    reopened_by = serializers.CharField()
    reopened_at = serializers.DateTimeField()


class GoldSerializer(serializers.ModelSerializer):
    """A gold label; the view sets ``stale_reason`` on it first (annotate.services.freeze.stale_gold_samples)."""

    decided_by = serializers.CharField(source="decided_by.username", read_only=True, default=None)
    stale = serializers.SerializerMethodField(
        help_text="True when spans it was built from changed or were deleted after it was decided (the curation "
        "page marks it stale): review it again.")
    stale_reason = serializers.CharField(
        read_only=True, allow_null=True, help_text="What changed, when it is stale; null otherwise.")

    class Meta:
        model = GoldLabel
        fields = ["sample", "round", "category", "spans", "method", "decided_by", "decided_at", "stale",
                  "stale_reason"]
        read_only_fields = fields

    def get_stale(self, gold: GoldLabel) -> bool:
        return gold.stale_reason is not None


class GoldRequestSerializer(RejectsUnknownFields):
    span_ids = serializers.ListField(child=serializers.IntegerField(max_value=MAX_ID), allow_empty=True)
    round = serializers.IntegerField(default=1, min_value=1, max_value=MAX_ROUND)
    base_decided_at = serializers.DateTimeField(
        required=False, allow_null=True,
        help_text="The gold label you saw: its decided_at as GET answered it, or null when it had none (GET 404). "
        "If another curator saved a gold label since, nothing is saved and the answer is 409 with the current one. "
        "Leave it out to write without the check.",
    )


class GoldConflictSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Who changed the gold label and when; nothing was saved.")
    current = GoldSerializer(allow_null=True, help_text="The gold label as it is now (null when it was removed).")


class FlagRequestSerializer(RejectsUnknownFields):
    """An annotator's flag on a sample; checked again by annotate.services.flags."""

    kind = serializers.ChoiceField(choices=["broken", "skip"])
    comment = serializers.CharField(required=False, allow_blank=True, default="", trim_whitespace=True)
    round = serializers.IntegerField(default=1, min_value=1)


class AsSent(serializers.Field):
    """A body value handed to the view as it was sent, for a view that reads it as it reads the same query parameter
    (with the same messages): the serializer only names the field, so that every other key is refused."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class FlagWithdrawSerializer(RejectsUnknownFields):
    """Withdrawing a flag (DELETE): no body, ``{}``, or only ``round`` (``?round=`` is read first); any other key
    gets 400 and nothing is withdrawn. The view reads ``round`` (annotate.api.samples._round_value)."""

    round = AsSent(required=False)


class FlagSerializer(serializers.Serializer):
    kind = serializers.CharField(read_only=True)
    comment = serializers.CharField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)


# --------------------------------------------------------------------------- response bodies (for the schema)
# Shapes of answers built as dicts in the views; the schema describes them from these.


class ErrorSerializer(serializers.Serializer):
    detail = serializers.CharField(help_text="Why the request was refused, for a person to read.")


# A 400 body that documents the fields it usually names; the schema adds that any other field, or
# non_field_errors, may come too, each with a list of messages (annotate.api.errors).
class FieldErrorsSerializer(serializers.Serializer):
    pass


class ResendWithSerializer(serializers.Serializer):
    round = serializers.IntegerField(help_text="The round to send instead: the open one your change belongs in.")


class SpanConflictSerializer(serializers.Serializer):
    detail = serializers.CharField()
    current = SpanSerializer(
        allow_null=True, required=False,
        help_text="Stale version: the span as it is now (a span deleted meanwhile answers 404 instead). A new span "
        "that exists already: the existing span. Absent for a frozen round.",
    )
    frozen = serializers.BooleanField(required=False, help_text="True when the round is frozen (submitted).")
    existing = serializers.IntegerField(
        required=False,
        help_text="A new span whose offsets and labels you already have on the sample with another note or "
        "source link: that span's id. Edit it (PATCH) instead; nothing was saved.",
    )
    resend_with = ResendWithSerializer(
        required=False,
        help_text="A new span or a review sent to round 1 after round 2 of the batch opened (round 1 is frozen): "
        "the field to change and the value to send, {\"round\": 2}. Absent otherwise.",
    )


class SimilarityLoadingSerializer(serializers.Serializer):
    detail = serializers.CharField()
    loading = serializers.BooleanField(help_text="True while the embedding model is still being loaded: retry shortly.")


class SimilaritySentenceSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    start = serializers.IntegerField(help_text="Code-point offset in the other text (end-exclusive below).")
    end = serializers.IntegerField()
    similarity = serializers.FloatField(
        help_text="Ranking score in 0..1, higher is closer (the summed evidence of annotate.highlight), 3 places."
    )
    shade = serializers.IntegerField(
        help_text="4 marks the closest sentences; 0-3 grade the rest (0-1 only when nothing is close)."
    )


class SimilaritySerializer(serializers.Serializer):
    side = serializers.ChoiceField(choices=["summary", "source"], help_text="Where the selection is.")
    target = serializers.CharField(help_text="The text whose sentences are scored: the other one (summary or source).")
    sentences = SimilaritySentenceSerializer(many=True)
    closest = serializers.ListField(
        child=serializers.IntegerField(), help_text="Indexes of the sentences the ranking is confident about, best first; may be empty."
    )


class ReviewResultSerializer(serializers.Serializer):
    sample = serializers.IntegerField()
    round = serializers.IntegerField()
    done = serializers.BooleanField()
    seconds_spent = serializers.IntegerField()


class OtherSpanSerializer(serializers.Serializer):
    annotator = serializers.CharField(help_text="A name or a pseudonym, as the batch's round 2 was opened.")
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    text = serializers.CharField()
    labels = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField(allow_blank=True)
    source_start = serializers.IntegerField(allow_null=True)
    source_end = serializers.IntegerField(allow_null=True)
    source_text = serializers.CharField(allow_null=True)
    agrees = serializers.BooleanField(help_text="One of your round-2 spans overlaps it with the same category.")


class OthersSerializer(serializers.Serializer):
    spans = OtherSpanSerializer(many=True)
    worst_labels = serializers.DictField(
        child=serializers.CharField(), help_text="Each round-1 annotator's worst label for the sample."
    )
    disagree = serializers.BooleanField(help_text="True when those worst labels differ.")
    you = serializers.CharField(
        allow_null=True,
        help_text="Your own name among worst_labels (your pseudonym when the batch hides names); null when you did "
        "not submit round 1 of the batch.",
    )
