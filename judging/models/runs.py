"""Judge runs, their per-call judgements, and the cache that answers identical calls without calling."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotate.models import Batch, Project, Sample
from judging.models.cancelling import CancellableProgress
from judging.models.judges import Judge, PromptVersion


class JudgeRun(CancellableProgress):
    """One judge scoring a set of targets in the background; the row is also the progress the page polls."""

    class Scope(models.TextChoices):
        ALL = "all", "Every sample of the project"
        BATCH = "batch", "The samples of one batch"
        FLAGGED = "flagged", "The flagged samples"
        SYNTHETIC = "synthetic", "A synthetic set"
        IMPORTED = "imported", "Imported judge outputs"

    class Purpose(models.TextChoices):
        PLAIN = "plain", "Plain run"
        FIRST_PASS = "first_pass", "Triage first pass (flags)"
        EXPLAIN = "explain", "Triage explanation of flagged outputs"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judge_runs")
    judge = models.ForeignKey(Judge, on_delete=models.CASCADE, related_name="runs")
    rubric = models.ForeignKey(PromptVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="runs")
    scope = models.CharField(max_length=10, choices=Scope.choices, default=Scope.ALL)
    purpose = models.CharField(max_length=10, choices=Purpose.choices, default=Purpose.PLAIN)
    batch = models.ForeignKey(Batch, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    synthetic_set = models.ForeignKey(
        "judging.SyntheticSet", null=True, blank=True, on_delete=models.CASCADE, related_name="runs"
    )
    # An explain run: the first pass whose flags it judges (set by triage.start_explanation).
    explains = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="explanations"
    )
    scored = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    calls = models.PositiveIntegerField(default=0)  # endpoint requests actually sent (retries included)
    cached = models.PositiveIntegerField(default=0)  # judgements answered from the call cache
    flagged = models.PositiveIntegerField(default=0)  # first-pass runs: outputs that went to the audit queue
    # Rubric judges: a cached answer that does not parse as a score is asked again (its new answer replaces the
    # cache row) instead of being served. On the row, so an execution resumed after a worker restart keeps it.
    ask_again = models.BooleanField(default=False)
    # Times this run went on after its execution was stopped mid-run: a starting worker queued it again (no process
    # was executing it), or Celery delivered its task again after the pool process running it was killed (the next
    # execution finds the killed one's mark: services.runs.locks). Requests in flight at such a stop reach no
    # judgement, so calls, tokens and cost under-count them.
    resumed = models.PositiveIntegerField(
        default=0, help_text="Times this run was resumed after its worker stopped mid-run."
    )
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # cancelled_by and cancelled_at (CancellableProgress): who cancelled it and when (judging.services.runs.cancel_run).

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.judge} ({self.status})"

    @property
    def seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()

    @property
    def all_failed(self) -> bool:
        """Done, yet not one target got a score (every call an endpoint error or an unreadable answer).

        Such a run finished its work, so its status stays ``done`` (a run that
        could not go on at all is ``failed``), but showing it as a plain "Done"
        passes off a run with no result as a success.
        """
        return self.status == self.Status.DONE and self.done > 0 and self.scored == 0

    @property
    def status_label(self) -> str:
        """The status as pages and the API show it: "Done: 15 of 15 failed" for a run with no score at all,
        "Cancelled" for a cancelled one (stored as failed)."""
        if self.all_failed:
            return f"{self.get_status_display()}: {self.failed} of {self.done} failed"
        if self.cancelled:
            return "Cancelled"
        return self.get_status_display()

    @property
    def cancellable(self) -> bool:
        """Whether the run can still be cancelled (queued or running; imported outputs never run)."""
        return self.is_active and self.scope != self.Scope.IMPORTED


class Judgement(models.Model):
    """One call's outcome for one target (a sample or a synthetic item) in one run. Never a guessed score."""

    class Status(models.TextChoices):
        OK = "ok", "Scored"
        PARSE_ERROR = "parse_error", "Answer could not be read as a score"
        ERROR = "error", "Endpoint or model error"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="judgements")
    sample = models.ForeignKey(Sample, null=True, blank=True, on_delete=models.CASCADE, related_name="judgements")
    synthetic_item = models.ForeignKey(
        "judging.SyntheticItem", null=True, blank=True, on_delete=models.CASCADE, related_name="judgements"
    )
    status = models.CharField(max_length=12, choices=Status.choices)
    score = models.PositiveSmallIntegerField(null=True, blank=True)  # 1..5, only when status is ok
    probability = models.FloatField(null=True, blank=True)  # NLI judges: P(consistent), max over windows
    sentence_scores = models.JSONField(null=True, blank=True)  # first-pass score per output sentence, if any
    reasoning = models.TextField(blank=True)
    raw = models.TextField(blank=True)  # the endpoint's last answer, as received
    error = models.TextField(blank=True)  # why it is a parse_error or an error
    prompt_version = models.ForeignKey(
        PromptVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="judgements"
    )
    request_mode = models.CharField(max_length=12, blank=True)  # structured | json | prompt
    latency_seconds = models.FloatField(null=True, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)  # US dollars
    cached = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(sample__isnull=False) & Q(synthetic_item__isnull=True))
                | (Q(sample__isnull=True) & Q(synthetic_item__isnull=False)),
                name="judgement_has_one_target",
            ),
            models.UniqueConstraint(
                fields=["run", "sample"], condition=Q(sample__isnull=False), name="one_judgement_per_run_sample"
            ),
            models.UniqueConstraint(
                fields=["run", "synthetic_item"],
                condition=Q(synthetic_item__isnull=False),
                name="one_judgement_per_run_synthetic_item",
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=1, score__lte=5), name="judgement_score_1_to_5"
            ),
            models.CheckConstraint(
                condition=Q(status="ok") | (Q(score__isnull=True) & Q(probability__isnull=True)),
                name="judgement_number_only_when_ok",
            ),
        ]

    def __str__(self) -> str:
        return f"judgement {self.pk} ({self.status}, {self.score})"

    @property
    def display_score(self) -> float | None:
        """The 1-5 figure shown beside LLM scores: the score, or 1 + 4p for an NLI judge (our scaling; the paper gives none)."""
        if self.score is not None:
            return float(self.score)
        if self.probability is not None:
            return 1 + 4 * self.probability
        return None

    # What this run spent on the judgement, the rule of every surface (API, page, exports): an answer from the call
    # cache made no call, so its latency and tokens are null and its cost 0. The row stores the earlier call's
    # latency and tokens (the cache's), shown apart as cached_call_*: summing a run's rows gives what it cost.
    @property
    def run_latency_seconds(self) -> float | None:
        return None if self.cached else self.latency_seconds

    @property
    def run_input_tokens(self) -> int | None:
        return None if self.cached else self.input_tokens

    @property
    def run_output_tokens(self) -> int | None:
        return None if self.cached else self.output_tokens

    @property
    def cost_unpriced(self) -> bool:
        """A call this run sent that reported its tokens (some above 0) and has no price: the judge had none when it
        was sent, so what it cost is not known. Read from what is stored: such a call is stored with cost null
        (Judge.cost_of; one stored with cost 0 before prices could be blank was made null by migration 0010, so a 0
        now is a free judge's true 0). Never an answer from the call cache (the run paid nothing) nor an imported
        judgement (its cost is the file's, 0 included)."""
        return (
            not self.cached and self.cost is None
            and self.input_tokens is not None and self.output_tokens is not None
            and self.input_tokens + self.output_tokens > 0
            and self.run.scope != JudgeRun.Scope.IMPORTED
        )

    @property
    def run_cost(self) -> float | None:
        """US$ this run paid for the call: 0 for an answer from the call cache; None when not known (no token
        usage reported, or cost_unpriced)."""
        if self.cached:
            return 0.0
        return None if self.cost_unpriced else self.cost

    @property
    def cached_call_latency_seconds(self) -> float | None:
        """The latency of the earlier call whose answer the cache served; None unless cached."""
        return self.latency_seconds if self.cached else None

    @property
    def cached_call_input_tokens(self) -> int | None:
        return self.input_tokens if self.cached else None

    @property
    def cached_call_output_tokens(self) -> int | None:
        return self.output_tokens if self.cached else None


class CallCache(models.Model):
    """An endpoint's answer to one exact request (prompt, model, parameters): asked again, it is not paid again."""

    key = models.CharField(max_length=64, unique=True)  # sha256 of the canonical request
    model = models.CharField(max_length=200)
    request_mode = models.CharField(max_length=12)
    raw = models.TextField()
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_seconds = models.FloatField(null=True, blank=True)
    hits = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)  # when the answer it holds came (an answer asked again too)

    def __str__(self) -> str:
        return f"cached answer {self.key[:12]} of {self.model}"
