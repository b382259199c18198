"""Synthetic hallucinations: LLM rewrites of gold sentences, and nested percentage sets built from them."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotate.models import Project, Sample
from annotate.models.core import Progress
from judging.models.judges import Judge, PromptVersion


class SyntheticSet(Progress):
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

    class Meta:
        ordering = ["project", "-created_at"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="one_synthetic_set_name")]

    def __str__(self) -> str:
        return f"synthetic set {self.name}"

    @property
    def cancel_note(self) -> str | None:
        """The "Cancelled by <user> at <time>." line of a cancelled set's notes; None unless cancelled.

        A cancelled set is stored as failed (judging.services.synthetic.cancel_synthetic_set), the line added last
        to ``error``, below the notes on skipped outputs: the set has no column for who cancelled it, as a judge run
        has none. Every status filter treats it as failed; only the pages, the API's ``status_label`` and a resume
        (which drops the line) word it apart.
        """
        if self.status != self.Status.FAILED:
            return None
        return self.stop_reason if _CANCELLED.fullmatch(self.stop_reason) else None

    @property
    def cancelled_by(self) -> str | None:
        """Who cancelled the set (usernames hold no spaces); None unless cancelled."""
        found = _CANCELLED.match(self.cancel_note or "")
        return found.group("who") if found else None

    @property
    def cancelled_at(self) -> datetime | None:
        """When the set was cancelled, read back from its note, whose time is written in the zone of that day
        (FAITHLAB_TIME_ZONE); None unless cancelled, or when that zone is no longer today's (the pages then quote
        the note as written)."""
        found = _CANCELLED.match(self.cancel_note or "")
        if found is None:
            return None
        written = datetime.strptime(found.group("time"), "%Y-%m-%d %H:%M:%S")  # noqa: DTZ007 - its zone is read next
        if found.group("zone") == "UTC":
            return written.replace(tzinfo=UTC)
        zone = timezone.get_current_timezone()
        for fold in (0, 1):  # the hour a clock goes back is written twice; the zone's name tells them apart
            moment = written.replace(tzinfo=zone, fold=fold)
            if moment.tzname() == found.group("zone"):
                return moment
        return None

    @property
    def status_label(self) -> str:
        """The status as pages and the API show it: "Cancelled" for a cancelled set (stored as failed)."""
        return "Cancelled" if self.cancel_note else self.get_status_display()

    @property
    def cancellable(self) -> bool:
        """Whether the set can still be cancelled: queued or running (an imported set never is)."""
        return self.is_active

    @property
    def stop_reason(self) -> str:
        """Why a failed set stopped: the last line of its notes (the lines above say which outputs it skipped)."""
        lines = [line for line in self.error.splitlines() if line.strip()]
        return lines[-1] if lines else ""


# annotate.services.jobs.cancelled_message's words, as a cancelled set's last note reads.
_CANCELLED = re.compile(r"Cancelled by (?P<who>\S+) at (?P<time>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<zone>\S+)\.")


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
