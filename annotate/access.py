"""Who may see or change what. Every view and API endpoint looks objects up here."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, F, FilteredRelation, OuterRef, Q, QuerySet
from django.http import Http404

from annotate.models import ApiToken, Assignment, Batch, Job, Membership, Project, Sample, SpanAnnotation

Role = Membership.Role
AnyUser = AbstractBaseUser | AnonymousUser


class Forbidden(PermissionDenied):
    """The user can see the object but may not do this to it; Django and DRF answer 403."""


def role_in(user: AnyUser, project: Project) -> str | None:
    if not user.is_authenticated:
        return None
    if user.is_superuser:
        return Role.ADMIN
    cache = getattr(user, "_faithlab_roles", None)
    if cache is None:
        known = getattr(user, "_faithlab_role_of", {})
        if project.pk in known:
            return known[project.pk]
        cache = dict(Membership.objects.filter(user=user).values_list("project_id", "role"))
        user._faithlab_roles = cache  # type: ignore[union-attr]
    return cache.get(project.pk)


def _remember_role(user: AbstractBaseUser, project_id: int, role: str | None) -> None:
    """Keep a role learnt with a row, so role_in() later in the request does not ask again."""
    if getattr(user, "_faithlab_roles", None) is None:
        user._faithlab_role_of = {**getattr(user, "_faithlab_role_of", {}), project_id: role}  # type: ignore[attr-defined]


def projects_for(user: AnyUser) -> QuerySet[Project]:
    if not user.is_authenticated:
        return Project.objects.none()
    if user.is_superuser:
        return Project.objects.all()
    return Project.objects.filter(memberships__user=user).distinct()


def get_project_for_user(user: AnyUser, slug: str, *, admin: bool = False) -> tuple[Project, str]:
    project = Project.objects.filter(slug=slug).first()
    role = role_in(user, project) if project else None
    if project is None or role is None:
        raise Http404("No such project")
    if admin and role != Role.ADMIN:
        raise Forbidden("Only the project's admins may do this")
    return project, role



def member_project_of_other_kind(user: AnyUser, slug: str, kind: str) -> Project | None:
    """The project ``slug`` names when it is not of ``kind`` and ``user`` is one of its members, else None.

    For API endpoints of one kind of project: a member asking about the other kind is told its kind (a 400), an
    outsider gets the same 404 as for a slug that names nothing. Asked only after the kind's own lookup failed.
    """
    project = Project.objects.filter(slug=slug).exclude(kind=kind).first()
    return project if project is not None and role_in(user, project) is not None else None

def get_pairs_project_for_user(
    user: AnyUser, slug: str, *, admin: bool = False, roles: tuple[str, ...] | None = None
) -> tuple[Project, str]:
    """A pairs project (with its settings, one query) and the user's role, for pages and the API alike.

    404 for outsiders and for span projects; 403 when ``admin`` and the user is no admin, or when the
    role is not in ``roles``.
    """
    project = Project.objects.select_related("pair_config").filter(slug=slug, kind=Project.Kind.PAIRS).first()
    role = role_in(user, project) if project else None
    if project is None or role is None:
        raise Http404("No such pairs project")
    if admin and role != Role.ADMIN:
        raise Forbidden("Only the project's admins may do this")
    if roles is not None and role not in roles:
        raise Forbidden(f"Your role in this project ({role}) may not do this")
    return project, role


# Exports hold everyone's work: admins and auditors only (annotators are blind in round 1).
EXPORTER_ROLES = (Role.ADMIN, Role.AUDITOR)


def get_project_for_exporter(user: AnyUser, slug: str) -> tuple[Project, str]:
    """A project of any kind whose data the user may export (EXPORTER_ROLES); 404 outside it, else 403."""
    project, role = get_project_for_user(user, slug)
    if role not in EXPORTER_ROLES:
        raise Forbidden("Only the project's admins and auditors may export its data")
    return project, role


# Who sees which jobs: the project page's job lines (annotate.services.pages.project_overview for a span project:
# embedding for admins, exports for admins and auditors; annotate.services.pairs.overview for a pairs project: its
# jobs for those who see its figures). The API's job endpoint follows the same rule.
PAIR_JOB_KINDS = (Job.Kind.PERTURB, Job.Kind.PAIR_VECTORS, Job.Kind.PAIR_ROUND)
PAGE_JOB_KINDS: dict[str, dict[str, tuple[str, ...]]] = {
    Project.Kind.SPANS: {Role.ADMIN: (Job.Kind.EMBED, Job.Kind.EXPORT), Role.AUDITOR: (Job.Kind.EXPORT,)},
    Project.Kind.PAIRS: dict.fromkeys((Role.ADMIN, Role.AUDITOR, Role.CURATOR), PAIR_JOB_KINDS),
}


def get_job_for_user(user: AnyUser, slug: str, pk: int) -> Job:
    """One of the project's jobs, for the roles its project page shows that kind of job to: 404 for outsiders and
    for a job of another project, 403 for a member whose page does not show that kind of job."""
    project, role = get_project_for_user(user, slug)
    job = Job.objects.filter(project=project, pk=pk).first()
    if job is None:
        raise Http404("No such job in this project")
    job.project = project  # read already: the job's line (views.jobs) words it by the project's kind
    seen = PAGE_JOB_KINDS[project.kind]
    if job.kind not in seen.get(role, ()):
        allowed = {r: kinds for r, kinds in seen.items() if job.kind in kinds}
        if not allowed:  # a kind no page of this project shows (none today): hidden from everyone
            raise Http404("No such job in this project")
        raise Forbidden(f"The project page shows its {job.get_kind_display().lower()} jobs to its "
                        f"{_roles_in_words(allowed)} only")
    return job


# A span project's jobs its admins may cancel from the job's line (the project page, the job's URL) and the API; a
# pairs project's round and perturbation jobs have their own cancels (annotate.views.pairs, annotate.api.pairs).
CANCELLABLE_JOB_KINDS = (Job.Kind.EMBED, Job.Kind.EXPORT)


def may_cancel_job(role: str | None, job: Job) -> bool:
    """Whether a member of ``role`` is offered the cancel of ``job``: admins, while it is queued or running."""
    return role == Role.ADMIN and job.kind in CANCELLABLE_JOB_KINDS and job.is_active


def get_span_project_for_admin(user: AnyUser, slug: str) -> Project:
    """A span project, for its admins: 404 for outsiders and for a pairs project (whatever the role), else 403."""
    project, role = get_project_for_user(user, slug)
    if project.kind != Project.Kind.SPANS:
        raise Http404("No such span project")
    if role != Role.ADMIN:
        raise Forbidden("Only the project's admins may do this")
    return project


def get_job_for_canceller(user: AnyUser, slug: str, pk: int) -> Job:
    """An embedding or export job of a span project, for one of its admins to cancel: 404 for outsiders, for a
    pairs project and for a job of another project or kind, 403 for another role."""
    project = get_span_project_for_admin(user, slug)
    job = Job.objects.select_related("created_by").filter(project=project, pk=pk,
                                                          kind__in=CANCELLABLE_JOB_KINDS).first()
    if job is None:
        raise Http404("No such job to cancel in this project")
    return job


def _roles_in_words(roles: dict[str, Any]) -> str:
    names = [f"{role}s" for role in roles]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def get_project_for_curator(user: AnyUser, slug: str) -> tuple[Project, str]:
    project, role = get_project_for_user(user, slug)
    if role not in (Role.ADMIN, Role.CURATOR):
        raise Forbidden("Only the project's admins and curators adjudicate")
    return project, role


def get_batch_for_reviewer(user: AnyUser, slug: str, pk: int) -> tuple[Batch, str]:
    """A batch of the project for its sample browser: admins, curators and auditors; annotators get 403.

    The browser shows every annotator's progress and the pooled worst labels,
    which an annotator must not see in round 1.
    """
    project, role = get_project_for_user(user, slug)
    if role not in (Role.ADMIN, Role.CURATOR, Role.AUDITOR):
        raise Forbidden("Only the project's admins, curators and auditors browse a batch's samples")
    batch = Batch.objects.filter(project=project, pk=pk).first()
    if batch is None:
        raise Http404("No such batch")
    batch.project = project
    return batch, role


def samples_for(user: AnyUser, project: Project) -> QuerySet[Sample]:
    role = role_in(user, project)
    samples = Sample.objects.filter(project=project)
    if role in (Role.ADMIN, Role.AUDITOR, Role.CURATOR):
        return samples
    if role == Role.ANNOTATOR:
        return samples.filter(batch__assignments__annotator=user).distinct()
    return samples.none()


# Columns a write never reads (the sentence vectors alone are ~60 KB for a 40-sentence passage).
_NOT_FOR_WRITES = ("embeddings", "sentences", "metadata", "imported_fields")

# The role and assignment checks below are joins read by the row's own query, not
# Subquery()/Exists(): the same answers, but each ORM subquery costs about 0.5 ms of
# CPU to build, more than the database spends answering it (docs/performance.md, 2).


def get_sample_for_user(user: AnyUser, pk: int, *, write: bool = False) -> tuple[Sample, str]:
    """The sample and the user's role; 404 unless the user may see it, 403 for a forbidden write.

    One query: the sample with its project, passage and batch, the user's role and
    the state of each round of the batch the user is assigned to (a row per round),
    left for an annotator on ``sample.viewer_assignments``: the span services read
    the assignment and frozen-round checks there instead of asking again.
    """
    if not user.is_authenticated:
        raise Http404("No such sample")
    samples = Sample.objects.select_related("project", "passage", "batch").filter(pk=pk).order_by()
    if write:
        samples = samples.defer(*_NOT_FOR_WRITES, *(f"passage__{name}" for name in ("embeddings", "sentences")))
    if user.is_superuser:
        rows = list(samples)
        role: str | None = Role.ADMIN
        rounds: dict[int, tuple[str, bool, Any]] = {}
    else:
        rows = list(
            samples.filter(project__memberships__user=user).annotate(
                viewer_role=F("project__memberships__role"),
                my_assignments=FilteredRelation("batch__assignments", condition=Q(batch__assignments__annotator=user)),
                viewer_round=F("my_assignments__round"),
                viewer_status=F("my_assignments__status"),
                viewer_reopened=F("my_assignments__reopened"),
                viewer_submitted_at=F("my_assignments__submitted_at"),
            )
        )
        role = rows[0].viewer_role if rows else None  # no row: no such sample, or no role in its project
        rounds = {
            row.viewer_round: (row.viewer_status, row.viewer_reopened, row.viewer_submitted_at)
            for row in rows if row.viewer_round is not None
        }
    if not rows or role is None:
        raise Http404("No such sample")
    sample = rows[0]
    if not user.is_superuser:
        _remember_role(user, sample.project_id, role)
    if role == Role.ANNOTATOR:
        if not rounds:
            raise Http404("No such sample")
        sample.viewer_assignments = AssignmentStates(user.pk, rounds)  # type: ignore[attr-defined]
    elif write:
        raise Forbidden("Only the batch's annotators write spans")
    return sample, role


class AssignmentStates:
    """One annotator's assignments on one batch, by round: (status, reopened, submitted_at)."""

    def __init__(self, user_id: int, rounds: dict[int, tuple[str, bool, Any]]) -> None:
        self.user_id = user_id
        self.rounds = rounds

    @classmethod
    def of(cls, sample: Sample, user: AbstractBaseUser) -> AssignmentStates:
        """The states the access lookup left on the sample for this user, or read afresh."""
        states = getattr(sample, "viewer_assignments", None)
        if states is not None and states.user_id == user.pk:
            return states
        return cls.load(sample.batch_id, user)

    def frozen(self, round: int) -> bool:
        """Submitted, or superseded by a later round of the batch, and not re-opened by an admin."""
        state = self.rounds.get(round)
        if state is None or state[1]:
            return False
        return state[0] == Assignment.Status.SUBMITTED or any(later > round for later in self.rounds)

    @classmethod
    def load(cls, batch_id: int, user: AbstractBaseUser) -> AssignmentStates:
        rows = Assignment.objects.filter(batch_id=batch_id, annotator=user).values_list(
            "round", "status", "reopened", "submitted_at"
        )
        return cls(user.pk, {r: (status, reopened, at) for r, status, reopened, at in rows})


def get_batch_for_user(user: AnyUser, pk: int) -> tuple[Batch, str]:
    batch = Batch.objects.select_related("project").filter(pk=pk).first()
    role = role_in(user, batch.project) if batch else None
    if batch is None or role is None:
        raise Http404("No such batch")
    if role == Role.ANNOTATOR and not batch.assignments.filter(annotator=user).exists():
        raise Http404("No such batch")
    return batch, role


def with_assigned(spans: QuerySet[SpanAnnotation]) -> QuerySet[SpanAnnotation]:
    """Each span with ``assigned``: whether its annotator still holds that round of the sample's batch. Reviewers
    see every stored span, also those of someone unassigned or reassigned since (exports list them, though no figure
    counts them); this says which ones."""
    holds = Assignment.objects.filter(
        batch_id=OuterRef("sample__batch_id"), annotator_id=OuterRef("annotator_id"), round=OuterRef("round")
    )
    return spans.annotate(assigned=Exists(holds))


def visible_spans(user: AnyUser, sample: Sample, round: int) -> QuerySet[SpanAnnotation]:
    """Spans of one round that the user may see, each with ``assigned`` (``with_assigned``): an annotator sees only
    their own."""
    spans = with_assigned(SpanAnnotation.objects.filter(sample=sample, round=round).select_related("annotator"))
    if role_in(user, sample.project) == Role.ANNOTATOR:
        return spans.filter(annotator=user)
    return spans


def get_span_for_user(user: AnyUser, pk: int) -> SpanAnnotation:
    """A span the user may change: only its own author, an annotator of its batch.

    One query: the span, its sample and project, the user's role there and their
    assignments on the batch (a row per round). The passage is not joined; a change
    of the source link loads it.
    """
    if not user.is_authenticated:
        raise Http404("No such span")
    spans = SpanAnnotation.objects.select_related("sample__project").defer(
        *(f"sample__{name}" for name in _NOT_FOR_WRITES)
    ).filter(pk=pk).order_by()
    if user.is_superuser:
        span = next(iter(spans), None)
        role: str | None = Role.ADMIN
    else:
        rows = list(
            spans.filter(sample__project__memberships__user=user).annotate(
                viewer_role=F("sample__project__memberships__role"),
                my_assignments=FilteredRelation(
                    "sample__batch__assignments", condition=Q(sample__batch__assignments__annotator=user)
                ),
                viewer_round=F("my_assignments__round"),
                viewer_status=F("my_assignments__status"),
                viewer_reopened=F("my_assignments__reopened"),
                viewer_submitted_at=F("my_assignments__submitted_at"),
            )
        )
        span = rows[0] if rows else None
        role = span.viewer_role if span is not None else None  # type: ignore[attr-defined]
        if span is not None:
            # The author's rounds of the batch ride along, for the frozen-round check of the write.
            span.sample.viewer_assignments = AssignmentStates(  # type: ignore[attr-defined]
                user.pk,
                {
                    row.viewer_round: (row.viewer_status, row.viewer_reopened, row.viewer_submitted_at)  # type: ignore[attr-defined]
                    for row in rows if row.viewer_round is not None  # type: ignore[attr-defined]
                },
            )
    if span is None or role is None or (role == Role.ANNOTATOR and span.annotator_id != user.pk):
        raise Http404("No such span")
    if not user.is_superuser:
        _remember_role(user, span.sample.project_id, role)
    if span.annotator_id != user.pk:
        raise Forbidden("Only the span's author may change it")
    span.annotator = user  # the author is the user authentication already loaded
    # Only while the author holds the span's round of the batch: one unassigned or reassigned since keeps their
    # spans stored (reviewers see them marked "(not assigned)"), but changes them no more, as they add none.
    states = AssignmentStates.of(span.sample, user)  # a superuser's are read here, the others' came with the span
    span.sample.viewer_assignments = states  # type: ignore[attr-defined]
    if span.round not in states.rounds:
        raise Forbidden(span_round_not_held(span))
    return span


def span_round_not_held(span: SpanAnnotation) -> str:
    """Why the author of ``span`` may not change it: they no longer hold its round of the batch (the create path's
    wording, annotate.services.spans)."""
    batch = Batch.objects.filter(pk=span.sample.batch_id).values_list("name", flat=True).first()
    return (f"you are not assigned to round {span.round} of batch {batch!r}, so your spans there can no longer "
            "be changed; they stay stored as they are (exports list them), and nothing was changed")


# --- campaign management (members page, batch annotators page, API tokens) ---------------------------------


def get_batch_for_admin(user: AnyUser, slug: str, pk: int) -> Batch:
    """A batch whose annotators the user may change: 404 outside the project, 403 unless its admin."""
    project, _ = get_project_for_user(user, slug, admin=True)
    batch = Batch.objects.filter(project=project, pk=pk).first()
    if batch is None:
        raise Http404("No such batch")
    batch.project = project
    return batch


def get_assignment_for_admin(user: AnyUser, slug: str, pk: int) -> Assignment:
    project, _ = get_project_for_user(user, slug, admin=True)
    assignment = Assignment.objects.select_related("batch", "annotator").filter(batch__project=project, pk=pk).first()
    if assignment is None:
        raise Http404("No such assignment")
    assignment.batch.project = project
    return assignment


def get_membership_for_admin(user: AnyUser, slug: str, pk: int) -> Membership:
    project, _ = get_project_for_user(user, slug, admin=True)
    membership = Membership.objects.select_related("user").filter(project=project, pk=pk).first()
    if membership is None:
        raise Http404("No such member")
    membership.project = project
    return membership


def get_member_by_username_for_admin(user: AnyUser, slug: str, username: str) -> Membership:
    """A member named by username (the API's member URLs): 404 outside the project or for a non-member, 403 unless
    its admin. The exact spelling first, then any case, as the members page's "Add an existing user" finds people."""
    project, _ = get_project_for_user(user, slug, admin=True)
    members = Membership.objects.select_related("user").filter(project=project)
    name = f"user__{get_user_model().USERNAME_FIELD}"
    membership = members.filter(**{name: username}).first() or (
        members.filter(**{f"{name}__iexact": username}).order_by("pk").first()
    )
    if membership is None:
        raise Http404(f"No member {username!r} in this project")
    membership.project = project
    return membership


def get_api_token_for_user(user: AnyUser, pk: int) -> ApiToken:
    """One of the user's own API tokens; anyone else's answers 404, as if it did not exist."""
    token = ApiToken.objects.filter(pk=pk, user_id=user.pk).first() if user.is_authenticated else None
    if token is None:
        raise Http404("No such token")
    return token
