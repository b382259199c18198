"""The audit queue: flagged outputs, and each auditor's verdict on the judge's score and reasoning."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotate.models import Project, Sample
from judging.models.runs import Judgement


class AuditItem(models.Model):
    """A sample in a project's audit queue, flagged by a first-pass judgement (or added by an admin)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="audit_items")
    sample = models.ForeignKey(Sample, on_delete=models.CASCADE, related_name="audit_items")
    flagged_by = models.ForeignKey(Judgement, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=300)  # e.g. "score 2 <= 3 from judge gpt-mini (run 4)"
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "sample"], name="one_audit_item_per_sample")]

    def __str__(self) -> str:
        return f"audit item {self.pk} ({self.sample_id})"


class Audit(models.Model):
    """One auditor's verdict on one item; created when the item is served, answered when submitted."""

    item = models.ForeignKey(AuditItem, on_delete=models.CASCADE, related_name="audits")
    auditor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="audits")
    # The judgement whose score and reasoning the auditor saw (the explainer's, else the first pass's).
    judgement = models.ForeignKey(Judgement, null=True, blank=True, on_delete=models.SET_NULL, related_name="audits")
    score = models.PositiveSmallIntegerField(null=True, blank=True)  # 1..5, null until answered
    agreed = models.BooleanField(default=False)  # the auditor accepted the judge's score as it was
    reasoning_wrong = models.BooleanField(default=False)
    note = models.TextField(blank=True)
    blind = models.BooleanField(default=False)  # the final score is the one given before the judge's answer was revealed
    # The score given before the reveal (blind mode), kept when the auditor changes their mind after it: ``blind`` says
    # only whether the final score is that one, so without it a changed mind lost the unanchored score.
    blind_score = models.PositiveSmallIntegerField(null=True, blank=True)
    # When the item's time counts from: its serving, moved forward by the time its clock stood still while the
    # auditor changed a saved verdict (judging.services.audits.queue.resume_item_clock).
    served_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)  # the first verdict; a change leaves it (and seconds)
    seconds = models.FloatField(null=True, blank=True)  # answered_at - served_at, measured by the server
    changed_at = models.DateTimeField(null=True, blank=True)  # the latest change of a saved verdict (u on the page)

    class Meta:
        ordering = ["item", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "auditor"], name="one_audit_per_item_and_auditor"),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=1, score__lte=5), name="audit_score_1_to_5"
            ),
            models.CheckConstraint(
                condition=Q(blind_score__isnull=True) | Q(blind_score__gte=1, blind_score__lte=5),
                name="audit_blind_score_1_to_5",
            ),
        ]

    def __str__(self) -> str:
        return f"audit {self.pk} by {self.auditor_id} ({self.score})"


class BlindScore(models.Model):
    """The score an auditor gave an item in blind mode, before the judges' answers were shown to them (the page's
    reveal). Written once: the first stays, since the judges were shown right after it, so a later one may be
    anchored (judging.services.audits.give_blind_score). The verdict, when saved, copies it into
    ``Audit.blind_score``; kept in the database rather than the login session, a session that ends between the reveal
    and the save loses nothing."""

    item = models.ForeignKey(AuditItem, on_delete=models.CASCADE, related_name="blind_scores")
    auditor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    score = models.PositiveSmallIntegerField()  # 1..5
    given_at = models.DateTimeField()

    class Meta:
        ordering = ["item", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "auditor"], name="one_blind_score_per_item_and_auditor"),
            models.CheckConstraint(condition=Q(score__gte=1, score__lte=5), name="blind_score_1_to_5"),
        ]

    def __str__(self) -> str:
        return f"blind score {self.score} by {self.auditor_id} on item {self.item_id}"


class JudgesShown(models.Model):
    """When an item's judges' answers were first shown to an auditor: on the audit page (a reveal, blind mode off, a
    view that did not hide them) or through the API's queue, which always includes them. Kept in the database, not
    the login session, so a new login, another browser or the API cannot make an item look unseen again: once shown,
    a score given later is no blind one (judging.services.audits.give_blind_score refuses it) and the page does not
    hide the answers again."""

    item = models.ForeignKey(AuditItem, on_delete=models.CASCADE, related_name="judges_shown")
    auditor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    shown_at = models.DateTimeField()

    class Meta:
        ordering = ["item", "id"]
        constraints = [
            models.UniqueConstraint(fields=["item", "auditor"], name="judges_shown_once_per_item_and_auditor"),
        ]

    def __str__(self) -> str:
        return f"judges of item {self.item_id} shown to {self.auditor_id}"
