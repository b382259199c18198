"""Rows of the perturbed-pair workflow (HaDes): originals, perturbed texts, items, judgements, rounds, detectors.

An item is one replaced span of one perturbed text. Judges answer H, N or ?
for an item; a judgement row is created when the item is served (that is the
claim that keeps an item from getting more judges than it needs) and gets its
label when the answer arrives. The item keeps denormalised counters that the
queue and the consensus rule read under a row lock.
"""

from __future__ import annotations

import numpy as np
from django.conf import settings
from django.db import models

from annotate.models.core import Project


class PairConfig(models.Model):
    """A pairs project's settings: judges per item, spammer rules, perturbation parameters and models."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="pair_config")
    judges_per_item = models.PositiveSmallIntegerField(default=4)
    max_judges_per_item = models.PositiveSmallIntegerField(default=6)
    # Spammer rules (HaDes footnote 5), checked once a judge has min_judgements answers.
    min_judgements = models.PositiveSmallIntegerField(default=10)
    spam_min_mean_seconds = models.FloatField(default=10.0)
    spam_max_disagreement = models.FloatField(default=0.30)
    # An unanswered serve holds its slot this long; after it, the slot goes back to the queue.
    serve_minutes = models.PositiveSmallIntegerField(default=20)
    # Perturbation (MASK -> REPLACE -> RANK).
    context_sentences = models.PositiveSmallIntegerField(default=2)
    mask_ratio = models.FloatField(default=0.6)
    top_k = models.PositiveSmallIntegerField(default=10)
    temperature = models.FloatField(default=1.0)
    candidates = models.PositiveSmallIntegerField(default=20)
    # Local paths; blank falls back to the PAIRS_MASKED_LM / PAIRS_CAUSAL_LM / PAIRS_SPACY_PIPELINE settings.
    masked_lm = models.CharField(max_length=500, blank=True)
    causal_lm = models.CharField(max_length=500, blank=True)
    spacy_pipeline = models.CharField(max_length=500, blank=True)
    # Detector encoder: blank means the PAIRS_ENCODER setting (the packaged MiniLM by default).
    encoder = models.CharField(max_length=500, blank=True)
    # Subsampling ratio: fewer labelled items than this and R is undefined.
    min_counts = models.PositiveSmallIntegerField(default=20)

    def __str__(self) -> str:
        return f"pair settings of {self.project}"


class PairOriginal(models.Model):
    """A text to perturb (imported raw), or the original side of imported ready pairs."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pair_originals")
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    # Set when the perturbation job has made this original's perturbed text.
    perturbed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["project", "external_id"], name="pair_original_id_in_project")]

    def __str__(self) -> str:
        return f"original {self.external_id}"


class PerturbedText(models.Model):
    """One perturbed version of an original; its replaced spans are the items."""

    class Source(models.TextChoices):
        PIPELINE = "pipeline", "Perturbation pipeline"
        PAIRS = "pairs", "Imported pair file"
        HADES = "hades", "Imported HaDes file"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="perturbed_texts")
    # Null for HaDes release rows, which carry no original text.
    original = models.ForeignKey(
        PairOriginal, null=True, blank=True, on_delete=models.CASCADE, related_name="perturbed_texts"
    )
    group = models.CharField(max_length=200, blank=True)  # the pair format's `group`
    text = models.TextField()
    source = models.CharField(max_length=10, choices=Source.choices)
    # Everything that made it: models, parameters, seed, candidate perplexities.
    parameters = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    perplexity = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"perturbed text {self.pk}"


class PairRound(models.Model):
    """A selection round: which items were drawn, with what filters, detector and subsampling ratio."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pair_rounds")
    number = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    size = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    # Filters as set in the wizard: {"low", "high", "paraphrase_max", "drop_fraction"}.
    filters = models.JSONField(default=dict, blank=True)
    # [{"step": name, "count": n, "explanation": text}, ...] pool -> band -> paraphrase -> date/name -> subsampled.
    funnel = models.JSONField(default=list, blank=True)
    # The subsampling ratio's counts, alpha, beta, gamma, R, closed form, action, reason, shares kept.
    ratio = models.JSONField(default=dict, blank=True)
    # Share of H promised by the subsampling (0.5 when R balanced it), null when nothing was promised.
    promised_h_share = models.FloatField(null=True, blank=True)
    detector = models.ForeignKey(
        "PairDetector", null=True, blank=True, on_delete=models.SET_NULL, related_name="rounds_selected"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="pair_round_number_in_project")]

    def __str__(self) -> str:
        return f"round {self.number} of {self.project}"


class PairDetector(models.Model):
    """A trained detector head over frozen span vectors, and what it was trained on."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pair_detectors")
    number = models.PositiveSmallIntegerField()  # detector k is trained before round k + 1
    encoder = models.CharField(max_length=500)
    trained_on = models.PositiveIntegerField(default=0)  # consensus items used for training
    trained_h = models.PositiveIntegerField(default=0)
    head = models.BinaryField()  # the head's parameters (numpy .npz bytes)
    train_seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="pair_detector_number_in_project")]

    def __str__(self) -> str:
        return f"detector {self.number} of {self.project}"


class PairItem(models.Model):
    """One replaced span of a perturbed text: the unit a judge labels H, N or ?."""

    class State(models.TextChoices):
        POOL = "pool", "In the pool"  # not drawn into a round (or a HaDes row labelled -1)
        OPEN = "open", "Being judged"
        CONSENSUS = "consensus", "Consensus"
        NO_CONSENSUS = "none", "No consensus"
        LABELLED = "labelled", "Labelled on import"  # HaDes rows labelled 0 or 1: consensus without votes

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pair_items")
    perturbed = models.ForeignKey(PerturbedText, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField(default=0)  # order of the span within its perturbed text
    external_id = models.CharField(max_length=200, blank=True)  # the pair format's item_id
    metadata = models.JSONField(default=dict, blank=True)
    # Code points, end-exclusive. The original side is null for HaDes rows.
    original_start = models.PositiveIntegerField(null=True, blank=True)
    original_end = models.PositiveIntegerField(null=True, blank=True)
    original_words = models.TextField(blank=True)
    perturbed_start = models.PositiveIntegerField()
    perturbed_end = models.PositiveIntegerField()
    perturbed_words = models.TextField()
    # A HaDes row exactly as it came (replaced, replaced_ids, hallucination, extra keys), for a lossless export.
    imported_fields = models.JSONField(default=dict, blank=True)

    state = models.CharField(max_length=10, choices=State.choices, default=State.POOL)
    label = models.CharField(max_length=1, blank=True)  # consensus (or imported) label: H or N
    round = models.ForeignKey(PairRound, null=True, blank=True, on_delete=models.SET_NULL, related_name="items")
    # Why the round drew it: {"p_h", "predicted", "filters_passed", "sampling_probability", "method"}.
    selection = models.JSONField(default=dict, blank=True)
    # Judges the item needs now: judges_per_item, raised by 2 on a split up to max_judges_per_item.
    judges_needed = models.PositiveSmallIntegerField(default=0)
    # Counted judgements holding a slot (served and unexpired, or answered); the queue's claim counter.
    taken = models.PositiveSmallIntegerField(default=0)
    votes_h = models.PositiveSmallIntegerField(default=0)
    votes_n = models.PositiveSmallIntegerField(default=0)
    votes_unsure = models.PositiveSmallIntegerField(default=0)

    # Detector features, computed once per encoder: float16 span vector, and the paraphrase cosine.
    vector = models.BinaryField(null=True, blank=True)
    vector_model = models.CharField(max_length=500, blank=True)
    paraphrase_similarity = models.FloatField(null=True, blank=True)
    # "date", "name" or "" when the swap is neither; null until computed.
    swap_kind = models.CharField(max_length=5, null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["project", "state", "round"], name="pair_item_queue"),
            models.Index(fields=["perturbed", "position"], name="pair_item_in_text"),
        ]

    def __str__(self) -> str:
        return f"item {self.external_id or self.pk}: {self.original_words!r} -> {self.perturbed_words!r}"

    @property
    def answered(self) -> int:
        return self.votes_h + self.votes_n + self.votes_unsure

    @property
    def exported_id(self) -> str:
        """The item's one name outside the database: the pair format's item_id it was imported with, or, for an
        item made here, item-<pk>. The export writes it, and the pages and the API's item list show it."""
        return self.external_id or f"item-{self.pk}"

    def span_vector(self) -> np.ndarray | None:
        if not self.vector:
            return None
        return np.frombuffer(self.vector, dtype=np.float16).astype(np.float32)


class PairJudgement(models.Model):
    """A judge's answer on an item. Created unanswered when the item is served; the label arrives later."""

    class Label(models.TextChoices):
        HALLUCINATION = "H", "Hallucination"
        NOT_HALLUCINATION = "N", "Not hallucination"
        UNSURE = "?", "Cannot determine"

    item = models.ForeignKey(PairItem, on_delete=models.CASCADE, related_name="judgements")
    judge = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="pair_judgements")
    round = models.ForeignKey(PairRound, null=True, on_delete=models.SET_NULL, related_name="judgements")
    label = models.CharField(max_length=1, choices=Label.choices, blank=True)  # blank while unanswered
    served_at = models.DateTimeField()
    answered_at = models.DateTimeField(null=True, blank=True)
    # Server-measured: answered_at - served_at.
    seconds = models.FloatField(null=True, blank=True)
    # False once the judge is blocked: the judgement stays on record but no figure counts it.
    counted = models.BooleanField(default=True)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["item", "judge"], name="one_judgement_per_item_and_judge")]
        indexes = [
            models.Index(fields=["judge", "answered_at"], name="pair_judgement_by_judge"),
            models.Index(fields=["answered_at", "served_at"], name="pair_judgement_open_serves"),
        ]

    def __str__(self) -> str:
        return f"{self.judge} says {self.label or '(pending)'} on {self.item_id}"


class JudgeFlag(models.Model):
    """A spammer rule a judge tripped, with the figures; an admin dismisses it or blocks the judge."""

    class Rule(models.TextChoices):
        SAME_LABEL = "same_label", "Same label on every judgement"
        TOO_FAST = "too_fast", "Mean time per item under the limit"
        DISAGREES = "disagrees", "Often against the other judges' majority"

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        DISMISSED = "dismissed", "Dismissed"
        BLOCKED = "blocked", "Judge blocked"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judge_flags")
    judge = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judge_flags")
    rule = models.CharField(max_length=12, choices=Rule.choices)
    figures = models.JSONField(default=dict)  # what the rule measured, e.g. {"judgements": 12, "mean_seconds": 4.1}
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reviewed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["project", "judge", "rule"], name="one_flag_per_judge_rule")]

    def __str__(self) -> str:
        return f"{self.rule} flag on {self.judge} in {self.project}"


class BlockedJudge(models.Model):
    """A judge an admin blocked in a pairs project: no more items, and no judgement of theirs counts."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="blocked_judges")
    judge = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    blocked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.TextField(blank=True)
    blocked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "judge"], name="one_block_per_judge")]

    def __str__(self) -> str:
        return f"{self.judge} blocked in {self.project}"
