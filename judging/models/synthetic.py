"""Synthetic hallucinations: LLM rewrites of gold sentences, and nested percentage sets built from them."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotate.models import Project, Sample
from judging.models.cancelling import CancellableProgress
from judging.models.judges import Judge, PromptVersion


class SyntheticSet(CancellableProgress):
    """Rewrites of a project's gold outputs by one LLM, and the percentage sets made from them (seeded)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="synthetic_sets")
    name = models.CharField(max_length=100)
    # The endpoint that writes the rewrites (a rubric judge's endpoint settings); null for imported rewrites.
    writer = models.ForeignKey(Judge, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    intrinsic_prompt = models.ForeignKey(PromptVersion, null=True, on_delete=models.PROTECT, related_name="+")
    extrinsic_prompt = models.ForeignKey(PromptVersion, null=True, on_delete=models.PROTECT, related_name="+")
    seed = models.PositiveIntegerField(default=0)
    sentences_per_output = models.PositiveSmallIntegerField(default=5)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # When Resume queued the set again (null until then): a queued set's wait for a worker counts from here, else
    # from created_at (annotate.services.jobs.cancel.job_wait), so a Resume long after the set was made is not
    # said at once to have no worker.
    queued_at = models.DateTimeField(null=True, blank=True)
    # cancelled_by and cancelled_at (CancellableProgress): who cancelled it and when
    # (judging.services.synthetic.cancel_synthetic_set); a resume clears them.

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="one_synthetic_set_name")]

    def __str__(self) -> str:
        return f"synthetic set {self.name}"

    @property
    def status_label(self) -> str:
        """The status as pages and the API show it: "Cancelled" for a cancelled set (stored as failed)."""
        return "Cancelled" if self.cancelled else self.get_status_display()

    @property
    def cancellable(self) -> bool:
        """Whether the set can still be cancelled: queued or running (an imported set never is)."""
        return self.is_active

    @property
    def stop_reason(self) -> str:
        """Why a failed set stopped: the last line of its notes (the lines above say which outputs it skipped)."""
        lines = [line for line in self.error.splitlines() if line.strip()]
        return lines[-1] if lines else ""

    @property
    def cancel_note(self) -> str | None:
        """The "Cancelled by <user> at <time>." line the cancel added last to a cancelled set's notes, below those on
        skipped outputs; None unless cancelled. Who and when are read from the columns: this line is only left out
        where the notes are listed (the line says it already) and dropped by a resume."""
        return self.stop_reason if self.cancelled else None


class SyntheticRewrite(models.Model):
    """One gold sentence rewritten to be an intrinsic or an extrinsic hallucination."""

    class Type(models.TextChoices):
        INTRINSIC = "intrinsic", "Intrinsic (contradicts the source)"
        EXTRINSIC = "extrinsic", "Extrinsic (not verifiable from the source)"

    class Status(models.TextChoices):
        OK = "ok", "Rewritten"
        ERROR = "error", "Failed"

    synthetic_set = models.ForeignKey(SyntheticSet, on_delete=models.CASCADE, related_name="rewrites")
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="+")
    sentence_index = models.PositiveSmallIntegerField()
    type = models.CharField(max_length=10, choices=Type.choices)
    original = models.TextField()
    rewritten = models.TextField(blank=True)
    prompt = models.ForeignKey(PromptVersion, null=True, on_delete=models.PROTECT, related_name="+")
    raw = models.TextField(blank=True)
    status = models.CharField(max_length=6, choices=Status.choices)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["synthetic_set", "sample", "type", "sentence_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["synthetic_set", "sample", "sentence_index", "type"], name="one_rewrite_per_sentence_type"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} rewrite of sentence {self.sentence_index} of {self.sample_id}"


class SyntheticItem(models.Model):
    """An output with k of its n sentences replaced (percent = 100k/n); the 0% item is the gold output."""

    class Type(models.TextChoices):
        GOLD = "gold", "Gold (no sentence replaced)"
        INTRINSIC = "intrinsic", "Intrinsic"
        EXTRINSIC = "extrinsic", "Extrinsic"

    synthetic_set = models.ForeignKey(SyntheticSet, on_delete=models.CASCADE, related_name="items")
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="+")
    type = models.CharField(max_length=10, choices=Type.choices)
    percent = models.PositiveSmallIntegerField()  # 0, 20, ..., 100
    replaced = models.JSONField(default=list)  # sentence indices replaced, nested across percentages
    text = models.TextField()

    class Meta:
        ordering = ["synthetic_set", "sample", "type", "percent"]
        constraints = [
            models.UniqueConstraint(
                fields=["synthetic_set", "sample", "type", "percent"], name="one_synthetic_item_per_step"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.percent}% of {self.sample_id}"

    @property
    def expected_score(self) -> int:
        """5 for the gold output, 1 for any hallucinated version (DESIGN.md)."""
        return 5 if self.type == self.Type.GOLD else 1
