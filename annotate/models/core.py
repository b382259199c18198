"""Projects, members, batches, assignments and rounds: the rows every workflow shares, and background jobs."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import models

from annotate.taxonomy import default_taxonomy


class Project(models.Model):
    class Kind(models.TextChoices):
        SPANS = "spans", "Span annotation"
        PAIRS = "pairs", "Perturbed pairs"

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.SPANS)
    taxonomy = models.JSONField(default=default_taxonomy)
    annotators_per_batch = models.PositiveSmallIntegerField(default=2)
    guidelines = models.TextField(blank=True)
    # Annotation is blind by default: annotators see neither detector outputs nor the generator's name.
    reveal_generator = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", "Admin"
        ANNOTATOR = "annotator", "Annotator"
        AUDITOR = "auditor", "Auditor"
        CURATOR = "curator", "Curator"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=12, choices=Role.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="one_membership_per_user")]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.project}"


class Batch(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="batches")
    name = models.CharField(max_length=200)
    is_pilot = models.BooleanField(default=False)
    position = models.PositiveIntegerField(default=0)
    # Reconciliation (round 2) shows the others' round-1 work under their names, or as "Annotator A", "B", ...
    reveal_names = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["project", "name"], name="batch_name_in_project")]

    def __str__(self) -> str:
        return self.name


class Assignment(models.Model):
    """An annotator's duty on a batch in one round; submitted means they finished it."""

    class Status(models.TextChoices):
        ASSIGNED = "assigned", "Assigned"
        SUBMITTED = "submitted", "Submitted"

    batch = models.ForeignKey(Batch, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    round = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.ASSIGNED)
    submitted_at = models.DateTimeField(null=True, blank=True)
    # Left out of this batch's agreement by an admin (e.g. labeled only a few samples).
    excluded_from_agreement = models.BooleanField(default=False)
    # Set while an admin has re-opened this submitted (or superseded) round; cleared on the next submission.
    reopened = models.BooleanField(default=False)

    class Meta:
        ordering = ["batch_id", "round", "annotator_id"]
        constraints = [models.UniqueConstraint(fields=["batch", "annotator", "round"], name="one_assignment_per_round")]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.batch} round {self.round}"


class RoundReopening(models.Model):
    """An admin re-opened one annotator's frozen round: who, when and why, kept for the record."""

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="reopenings")
    reopened_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    reopened_at = models.DateTimeField(auto_now_add=True)
    reason = models.TextField()
    # When the annotator submitted the round again (null while it is still open).
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-reopened_at", "-id"]

    def __str__(self) -> str:
        return f"{self.assignment} re-opened by {self.reopened_by}"


class Progress(models.Model):
    """What a page polls for long background work: a status and how much of the total is done.

    Shared by annotate's jobs and the judging app's runs and synthetic sets.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True

    @property
    def percent(self) -> int:
        if self.total == 0:
            return 100 if self.status == self.Status.DONE else 0
        return min(100, round(100 * self.done / self.total))

    @property
    def is_active(self) -> bool:
        return self.status in {self.Status.QUEUED, self.Status.RUNNING}


class Job(Progress):
    """Progress of a long background job, polled by the pages."""

    class Kind(models.TextChoices):
        EMBED = "embed", "Sentence splitting and embedding"
        EXPORT = "export", "Export"
        PERTURB = "perturb", "Perturbation of raw texts"
        PAIR_VECTORS = "pairvecs", "Span vectors of pair items"
        PAIR_ROUND = "pairround", "Training the detector and drawing a pair round"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="jobs")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    error = models.TextField(blank=True)
    options = models.JSONField(default=dict, blank=True)
    result_path = models.CharField(max_length=500, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"

    @property
    def progress_unit(self) -> str:
        """What ``done`` and ``total`` count, in words, so a page says "0 of 36 texts (passages and summaries)"
        rather than a bare "0 / 36" beside other counts of other things."""
        return PROGRESS_UNITS.get(self.kind, "steps")

    @property
    def cancelled_by(self) -> str | None:
        """Who cancelled the job (``options["cancelled_by"]``, kept by jobs.cancel_job); None unless cancelled.

        A cancelled job is stored as failed, so the API and every status filter
        treat it as one; only the pages word it apart.
        """
        if self.status != self.Status.FAILED:
            return None
        return self.options.get("cancelled_by") or None

    @property
    def cancelled_at(self) -> datetime | None:
        """When the job was cancelled, parsed from ``options["cancelled_at"]`` (ISO text); None if absent or unreadable.

        ``error`` keeps the time as text in the zone of the day it was written;
        pages render this one in the current time zone instead.
        """
        return _moment(self.options.get("cancelled_at")) if self.cancelled_by else None

    @property
    def status_label(self) -> str:
        """The status as pages show it: "Cancelled" for a job an admin cancelled, not the "Failed" it is stored as."""
        return "Cancelled" if self.cancelled_by else self.get_status_display()

    @property
    def resumed(self) -> int:
        """Times a starting worker queued the job again after its worker stopped (``options["resumed"]``, counted by
        jobs.recovery, as a judge run's ``resumed`` column is); 0 for a job never resumed."""
        count = self.options.get("resumed")
        return count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 0

    @property
    def resumed_at(self) -> datetime | None:
        """When it was last queued again (``options["resumed_at"]``, ISO text); None if never, or unreadable."""
        return _moment(self.options.get("resumed_at")) if self.resumed else None


def _moment(stamp: object) -> datetime | None:
    """An aware time kept in a job's options as ISO text; None if absent, unreadable or without a zone."""
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


PROGRESS_UNITS = {
    Job.Kind.EMBED: "texts (passages and summaries)",  # each text's sentences are split and embedded together
    Job.Kind.EXPORT: "samples",
    Job.Kind.PERTURB: "original texts",
    Job.Kind.PAIR_VECTORS: "items",
    Job.Kind.PAIR_ROUND: "steps (each item's span vector, then the draw)",
}


class FigureSet(models.Model):
    """The figures one query of a results page shows, kept so that every process can serve them at once.

    Written only by annotate.services.results_cache, which computes them with
    annotate.services.stats. ``version`` is the data version they were
    computed from (stale when it differs from the current one);
    ``refresh_queued_at`` is set while a refresh task is queued or running,
    the lock that keeps refreshes of one query to one at a time.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="figure_sets")
    kind = models.CharField(max_length=20)  # which stats figure set: results, agreement, spans
    key = models.CharField(max_length=64)  # digest of the kind and the query
    query = models.JSONField(default=dict)  # the figure set's arguments
    version = models.CharField(max_length=64)
    # JSON text, not a JSONField: PostgreSQL's jsonb reorders object keys, and their order is part of the figures.
    value = models.TextField()
    computed_at = models.DateTimeField()  # when the rows were read
    compute_seconds = models.FloatField(default=0.0)
    refresh_queued_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "key"], name="one_figure_set_per_query")]

    def __str__(self) -> str:
        return f"{self.kind} figures of {self.project_id} ({self.version[:8]})"


class LabelSetVersion(models.Model):
    """One saved state of a project's label set and guidelines; the project row holds the newest."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="label_set_versions")
    number = models.PositiveIntegerField()
    taxonomy = models.JSONField()
    guidelines = models.TextField(blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["project", "number"], name="label_set_version_number")]

    def __str__(self) -> str:
        return f"label set v{self.number} of {self.project}"


class Pseudonym(models.Model):
    """The project-wide stand-in name of an annotator ("Annotator A"), the same on every page and export.

    Letters are handed out in the order annotators first need one, never from database ids.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pseudonyms")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    label = models.CharField(max_length=40)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="one_pseudonym_per_user"),
            models.UniqueConstraint(fields=["project", "label"], name="pseudonym_unique_in_project"),
        ]

    def __str__(self) -> str:
        return f"{self.label} in {self.project}"


class ApiToken(models.Model):
    """A named API token a user made for themself. Only a digest of the key is stored; revoked ones stay listed."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12)  # the key's first characters, shown so the user can tell keys apart
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the whole key
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"token {self.name!r} of {self.user}"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
