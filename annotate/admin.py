from __future__ import annotations

from django.contrib import admin

from annotate.models import Assignment, Batch, GoldLabel, Job, Membership, Passage, Project, Sample, SpanAnnotation

admin.site.register([Project, Membership, Batch, Assignment, GoldLabel, Job])


@admin.register(Passage)
class PassageAdmin(admin.ModelAdmin):
    list_display = ["external_id", "project", "embedding_model"]
    exclude = ["embeddings"]


@admin.register(Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ["id", "external_id", "batch", "generator"]
    list_filter = ["project", "batch"]
    exclude = ["embeddings"]


@admin.register(SpanAnnotation)
class SpanAdmin(admin.ModelAdmin):
    list_display = ["id", "sample", "annotator", "round", "text", "version"]
    list_filter = ["round"]
