"""Rows of the span workflow (FaithBench): passages, samples, spans, reviews, gold labels and flags."""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.db import models

from annotate.models.core import Batch, Project


def _vectors(blob: bytes | None, count: int) -> np.ndarray | None:
    if not blob or count == 0:
        return None
    return np.frombuffer(blob, dtype=np.float32).reshape(count, -1)


class Passage(models.Model):
    """A source text; many samples (summaries by different generators) share one."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="passages")
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    sentences = models.JSONField(null=True, blank=True)  # [[start, end], ...] code points
    embeddings = models.BinaryField(null=True, blank=True)  # float32, unit length, one row a sentence
    embedding_model = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "external_id"], name="passage_id_in_project")]

    def __str__(self) -> str:
        return f"passage {self.external_id}"

    def sentence_vectors(self) -> np.ndarray | None:
        return _vectors(self.embeddings, len(self.sentences or []))


class Sample(models.Model):
    """One generated text (the summary) of a passage, annotated within a batch."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="samples")
    passage = models.ForeignKey(Passage, on_delete=models.CASCADE, related_name="samples")
    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="samples")
    position = models.PositiveIntegerField(default=0)
    external_id = models.CharField(max_length=200, blank=True)
    summary = models.TextField()
    generator = models.CharField(max_length=300, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    sentences = models.JSONField(null=True, blank=True)
    embeddings = models.BinaryField(null=True, blank=True)
    embedding_model = models.CharField(max_length=300, blank=True)
    # Values kept verbatim from an import (sample_id's type, extra keys) for a lossless export.
    imported_fields = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["batch_id", "position", "id"]
        indexes = [models.Index(fields=["batch", "position"])]

    def __str__(self) -> str:
        return f"sample {self.external_id or self.pk}"

    def sentence_vectors(self) -> np.ndarray | None:
        return _vectors(self.embeddings, len(self.sentences or []))


class SpanAnnotation(models.Model):
    """A marked span of a summary, with labels, a note and an optional source link."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="spans")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="spans")
    round = models.PositiveSmallIntegerField(default=1)
    start = models.PositiveIntegerField()
    end = models.PositiveIntegerField()
    text = models.TextField()
    labels = models.JSONField(default=list)
    note = models.TextField(blank=True)
    source_start = models.PositiveIntegerField(null=True, blank=True)
    source_end = models.PositiveIntegerField(null=True, blank=True)
    source_text = models.TextField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    external_id = models.CharField(max_length=100, blank=True)  # FaithBench annot_id
    # The round-1 span this round-2 span was copied from when reconciliation opened.
    origin = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="copies")
    # Values kept verbatim from an import so an export gives the file back.
    imported_fields = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["start", "end", "id"]
        indexes = [
            models.Index(fields=["sample", "round", "annotator"]),
            # The results pages' data version reads the latest edit; with this index that is one lookup.
            models.Index(fields=["updated_at"], name="span_updated_at"),
        ]

    def __str__(self) -> str:
        return f"{self.labels} on {self.text!r}"


class SampleReview(models.Model):
    """An annotator's verdict that a sample is finished; done with no span = consistent."""

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="reviews")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reviews")
    round = models.PositiveSmallIntegerField(default=1)
    done = models.BooleanField(default=False)
    seconds_spent = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sample", "annotator", "round"], name="one_review_per_round")]

    def __str__(self) -> str:
        return f"{self.annotator} {'done' if self.done else 'open'} on {self.sample} round {self.round}"


class GoldLabel(models.Model):
    """The adjudicated label of a sample, built by a curator from the annotators' spans."""

    class Method(models.TextChoices):
        MANUAL = "manual", "Chosen by a curator"
        BULK = "bulk", "Accepted in bulk: every annotator agreed"

    sample = models.OneToOneField(Sample, on_delete=models.CASCADE, related_name="gold")
    round = models.PositiveSmallIntegerField(default=1)
    category = models.CharField(max_length=1)  # worst-pooled: C, B, Q or U
    spans = models.JSONField(default=list)  # [{start, end, text, labels, note, source_start, source_end, from_span}]
    method = models.CharField(max_length=6, choices=Method.choices, default=Method.MANUAL)
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    decided_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"gold {self.category} for {self.sample}"


class SampleFlag(models.Model):
    """An annotator's report that a sample is broken or should be skipped, with a comment."""

    class Kind(models.TextChoices):
        BROKEN = "broken", "Broken"
        SKIP = "skip", "Skip"

    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="flags")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sample_flags")
    round = models.PositiveSmallIntegerField(default=1)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    comment = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["sample", "annotator", "round"], name="one_flag_per_annotator_round")
        ]

    def __str__(self) -> str:
        return f"{self.kind} flag on {self.sample} by {self.annotator}"
