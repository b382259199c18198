from __future__ import annotations

from rest_framework import serializers

from annotate.models import Batch, GoldLabel, Project, Sample


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
    batch = serializers.CharField(source="batch.name", read_only=True)
    project = serializers.CharField(source="project.slug", read_only=True)

    class Meta:
        model = Sample
        fields = [
            "id", "project", "batch", "external_id", "generator", "summary", "source",
            "summary_sentences", "source_sentences", "metadata",
        ]


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


class SpanWriteSerializer(serializers.Serializer):
    """Shape of a new span; values are checked by the service, which names the bad field."""

    sample = serializers.IntegerField()
    round = serializers.IntegerField(default=1, min_value=1)
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    labels = serializers.ListField(child=serializers.CharField())
    note = serializers.CharField(required=False, allow_blank=True, default="")
    source_start = serializers.IntegerField(required=False, allow_null=True, default=None)
    source_end = serializers.IntegerField(required=False, allow_null=True, default=None)


class SpanUpdateSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    start = serializers.IntegerField(required=False)
    end = serializers.IntegerField(required=False)
    labels = serializers.ListField(child=serializers.CharField(), required=False)
    note = serializers.CharField(required=False, allow_blank=True, allow_null=True)
    source_start = serializers.IntegerField(required=False, allow_null=True)
    source_end = serializers.IntegerField(required=False, allow_null=True)


class SimilarityRequestSerializer(serializers.Serializer):
    side = serializers.ChoiceField(choices=["summary", "source"])
    start = serializers.IntegerField(min_value=0)
    end = serializers.IntegerField(min_value=0)


class ReviewSerializer(serializers.Serializer):
    round = serializers.IntegerField(default=1, min_value=1)
    done = serializers.BooleanField()
    seconds = serializers.IntegerField(default=0, min_value=0, max_value=86400)


class GoldSerializer(serializers.ModelSerializer):
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, default=None)

    class Meta:
        model = GoldLabel
        fields = ["sample", "round", "category", "spans", "method", "decided_by", "decided_at"]
        read_only_fields = fields


class GoldRequestSerializer(serializers.Serializer):
    span_ids = serializers.ListField(child=serializers.IntegerField(), allow_empty=True)
    round = serializers.IntegerField(default=1, min_value=1)
