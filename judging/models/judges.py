"""Judges of a project, the versioned prompts they use, and the project's triage thresholds."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotate.models import Project

# Display labels of the five rubric levels ("On a scale from 1 to 5").
SCORE_LABELS = {
    5: "highly faithful",
    4: "very faithful",
    3: "slightly unfaithful",
    2: "very unfaithful",
    1: "highly unfaithful",
}


class PromptVersion(models.Model):
    """One version of an editable prompt of a project; every edit is a new row, runs point at the one they used."""

    class Kind(models.TextChoices):
        RUBRIC = "rubric", "Rubric (judge system prompt)"
        INTRINSIC = "intrinsic", "Intrinsic rewrite prompt"
        EXTRINSIC = "extrinsic", "Extrinsic rewrite prompt"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="prompt_versions")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    number = models.PositiveIntegerField()
    text = models.TextField()
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "kind", "number"]
        constraints = [
            models.UniqueConstraint(fields=["project", "kind", "number"], name="one_prompt_version_number"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} v{self.number} of {self.project}"


class Judge(models.Model):
    """A rubric LLM judge (an OpenAI-compatible endpoint), an NLI judge (a local model), or an imported one."""

    class Kind(models.TextChoices):
        RUBRIC = "rubric", "Rubric LLM judge"
        NLI = "nli", "NLI judge with sliding windows"
        IMPORTED = "imported", "Imported judge outputs"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="judges")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # Rubric LLM judges. The API key is never stored: only the name of the environment variable holding it.
    base_url = models.CharField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    api_key_env = models.CharField(max_length=100, blank=True)
    with_reasoning = models.BooleanField(default=True)
    concurrency = models.PositiveSmallIntegerField(default=4)
    timeout_seconds = models.FloatField(default=60.0)
    max_retries = models.PositiveSmallIntegerField(default=4)
    # US dollars per million tokens: null when not known (a call's cost is then not known either), 0 when free (a
    # local server: its calls cost 0).
    price_input_per_mtok = models.FloatField(null=True, blank=True, default=None)
    price_output_per_mtok = models.FloatField(null=True, blank=True, default=None)
    # NLI judges: a local sequence-classification model directory; windows as DESIGN.md says.
    nli_model_path = models.CharField(max_length=500, blank=True)
    nli_max_length = models.PositiveIntegerField(default=512)
    nli_overlap = models.PositiveIntegerField(default=32)
    nli_batch_size = models.PositiveIntegerField(default=32)
    # Which output class is "consistent" (HHEM-style models: index 1); blank = the model's config label map.
    nli_consistent_label = models.CharField(max_length=50, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "name"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="one_judge_name_per_project")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"

    @property
    def mode(self) -> str:
        """How the judge scores, as the tables print it."""
        if self.kind == self.Kind.RUBRIC:
            return "reasoning" if self.with_reasoning else "score only"
        return self.get_kind_display()

    def cost_of(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """Price of one call from the judge's price table; None when not known: the endpoint reported no token
        counts, or it reported tokens of a kind (input, output) whose price the judge does not know (null; a price
        of 0 is a free server's, and its calls cost 0). Judgement.cost_unpriced reads such a call."""
        if input_tokens is None or output_tokens is None:
            return None
        cost = 0.0
        for tokens, price in ((input_tokens, self.price_input_per_mtok), (output_tokens, self.price_output_per_mtok)):
            if tokens == 0:
                continue  # no tokens of this kind cost nothing, whatever their price
            if price is None:
                return None
            cost += tokens * price
        return cost / 1_000_000


class JudgingSettings(models.Model):
    """A project's triage: which judge is the first pass, which explains, and the thresholds that flag."""

    project = models.OneToOneField(Project, on_delete=models.CASCADE, related_name="judging_settings")
    first_pass = models.ForeignKey(Judge, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    explainer = models.ForeignKey(Judge, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # Flag when an LLM score <= llm_flag_at_most, or an NLI p < nli_flag_below (the paper sets none).
    llm_flag_at_most = models.PositiveSmallIntegerField(default=3)
    nli_flag_below = models.FloatField(default=0.5)
    # Auditors give their own score before the judge's is revealed unless they switch it off.
    blind_by_default = models.BooleanField(default=False)
    # How many auditors answer each flagged output (2 or more gives alpha among auditors).
    audits_per_item = models.PositiveSmallIntegerField(default=1)

    def __str__(self) -> str:
        return f"judging settings of {self.project}"
