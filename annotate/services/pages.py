"""What the pages show, gathered in one place so views stay thin. Reads only."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.urls import reverse

from annotate import access, embedder
from annotate.models import Assignment, Job, Membership, Passage, Project, Sample, SampleFlag, SampleReview
from annotate.services import export, freeze, progress, projects, rounds
from annotate.services.jobs import job_wait
from annotate.taxonomy import hotkey_labels

# Beside the name of an annotator who no longer holds the span's round of the batch (unassigned or reassigned):
# reviewers still see their stored spans, which count in no figure.
NOT_ASSIGNED = " (not assigned)"

# The span project page lists its batches a page at a time, as the sample browser and the curation page do.
BATCHES_PER_PAGE = 100


def _span_json(span: Any, *, mine: bool) -> dict[str, Any]:
    assigned = getattr(span, "assigned", True)  # access.visible_spans reads it with the span
    return {
        "id": span.pk,
        "annotator": span.annotator.username + ("" if assigned or mine else NOT_ASSIGNED),
        "assigned": assigned,
        "mine": mine,
        "round": span.round,
        "start": span.start,
        "end": span.end,
        "text": span.text,
        "labels": span.labels,
        "note": span.note,
        "source_start": span.source_start,
        "source_end": span.source_end,
        "source_text": span.source_text,
        "version": span.version,
    }


def annotation_page_data(sample: Sample, user: AbstractBaseUser, role: str, round: int | None) -> dict[str, Any]:
    """Everything the annotation page's script needs, as one JSON-ready dict."""
    my_rounds = list(
        Assignment.objects.filter(batch_id=sample.batch_id, annotator=user).order_by("round").values_list("round", flat=True)
    )
    if round is None:
        round = my_rounds[-1] if my_rounds else 1
    assigned = role == Membership.Role.ANNOTATOR and round in my_rounds
    frozen = None
    if assigned:
        frozen = freeze.frozen_reason(access.AssignmentStates.of(sample, user), round, sample.batch.name)
    can_edit = assigned and frozen is None
    order = list(Sample.objects.filter(batch_id=sample.batch_id).order_by("position", "id").values_list("id", flat=True))
    index = order.index(sample.pk)
    reviews = dict(
        SampleReview.objects.filter(sample__batch_id=sample.batch_id, annotator=user, round=round)
        .values_list("sample_id", "done")
    )
    state = access.AssignmentStates.of(sample, user).rounds.get(round) if assigned else None
    submitted = state is not None and state[0] == Assignment.Status.SUBMITTED
    reopened = _reopened(sample, user, round) if state is not None and state[1] else None
    done_ids = set(progress.done_samples(order, reviews, submitted=submitted))
    slug = sample.project.slug

    def url(pk: int | None) -> str | None:
        return f"{reverse('sample', args=[slug, pk])}?round={round}" if pk else None

    next_unfinished = next((pk for pk in order[index + 1 :] + order[:index] if pk not in done_ids), None)
    spans = access.visible_spans(user, sample, round).order_by("start", "end", "id")
    span_data = [_span_json(span, mine=span.annotator_id == user.pk) for span in spans]
    model = embedder.model_name()
    others = None
    if round == rounds.RECONCILIATION_ROUND and assigned:
        # Also once round 2 is submitted, read-only: what the annotator reconciled against, seen before.
        others = rounds.others_round_one(sample, user, span_data)
    flag = SampleFlag.objects.filter(sample=sample, annotator=user, round=round).first() if assigned else None
    sees_generator = role != Membership.Role.ANNOTATOR or sample.project.reveal_generator
    return {
        "sample_id": sample.pk,
        "project": slug,
        "batch": sample.batch.name,
        "round": round,
        "can_edit": can_edit,
        "frozen": frozen,
        # "Mark not done" is its own action, and only while the round is not frozen.
        "can_mark_not_done": can_edit,
        # Re-opened by an admin: who and why, and Submit again (D never submits a re-opened round).
        "reopened": reopened,
        # Blind by default: annotators see the generator only where the project reveals it.
        "generator": sample.generator if sees_generator else "",
        "flag": {"kind": flag.kind, "comment": flag.comment} if flag else None,
        "summary": sample.summary,
        "source": sample.passage.text,
        "summary_sentences": sample.sentences or [],
        "source_sentences": sample.passage.sentences or [],
        "embeddings_ready": sample.embedding_model == model and sample.passage.embedding_model == model,
        "spans": span_data,
        # Whose spans are listed though they no longer hold this round (a reviewer's read-only view says so).
        "not_assigned": sorted({span.annotator.username for span in spans
                                if not getattr(span, "assigned", True) and span.annotator_id != user.pk}),
        # An annotator's own spans of a round they no longer hold (unassigned from round 2): shown, never editable
        # (the API refuses their changes too, access.get_span_for_user); the read-only banner says why.
        "own_not_held": role == Membership.Role.ANNOTATOR and not assigned and any(s["mine"] for s in span_data),
        "others": others,
        "labels": hotkey_labels(sample.project.taxonomy),
        "done": sample.pk in done_ids,
        "position": index + 1,
        "total": len(order),
        "done_count": len(done_ids),
        "prev_url": url(order[index - 1] if index > 0 else None),
        "next_url": url(order[index + 1] if index + 1 < len(order) else None),
        "next_unfinished_url": url(next_unfinished),
        "home_url": reverse("home"),
        "guidelines_url": reverse("guidelines", args=[slug]),
        "api": {
            "spans": reverse("span-list"),
            "span": reverse("span-list") + "{id}/",
            "similarity": reverse("sample-similarity", args=[sample.pk]),
            "review": reverse("sample-review", args=[sample.pk]),
            "time": reverse("sample-time", args=[sample.pk]),
            "flag": f"{reverse('sample-detail', args=[sample.pk])}flag/",
        },
    }


def _reopened(sample: Sample, user: AbstractBaseUser, round: int) -> dict[str, Any] | None:
    """The annotator's re-opened round: the notice saying who re-opened it and why, and where Submit again posts."""
    assignment_id = (
        Assignment.objects.filter(batch_id=sample.batch_id, annotator=user, round=round, reopened=True)
        .values_list("pk", flat=True).first()
    )
    if assignment_id is None:
        return None
    entry = freeze.open_reopening(assignment_id)
    by = entry.reopened_by.get_username() if entry and entry.reopened_by else "an admin"
    reason = entry.reason.strip() if entry else ""
    if reason and not reason.endswith((".", "!", "?")):
        reason += "."
    return {
        "by": by,
        "reason": reason,
        "notice": f"Round {round} re-opened by {by}{': ' + reason if reason else '.'} Your changes save as you go; "
                  "press Submit again when you are done.",
        "submit_url": reverse("batch-submit", args=[sample.batch_id]),
    }


def job_lines(jobs: list[Job], role: str) -> list[Job]:
    """Each job with what its line shows beside its progress (templates/annotate/_job.html): ``wait``, how long it
    has been queued or running (a job queued too long says that no worker may be running), and
    ``cancel_allowed``, whether this member is offered its Cancel (access.may_cancel_job)."""
    for job in jobs:
        job.wait = job_wait(job)
        job.cancel_allowed = access.may_cancel_job(role, job)
    return jobs


def _export_jobs(project: Project) -> list[Job]:
    """The project's latest exports, each with ``settings_in_words``: its format and round as the export form names
    them ("JSONL, a sample a line · round 1 (independent)"), not the stored codes."""
    jobs = list(Job.objects.filter(project=project, kind=Job.Kind.EXPORT).select_related("created_by")[:10])
    for job in jobs:
        job.settings_in_words = export.describe_options(job.options or {})
    return jobs


def project_overview(project: Project, user: AbstractBaseUser, role: str, page_number: Any = 1) -> dict[str, Any]:
    """Batches with each annotator's progress, page ``page_number`` of them (anything Paginator.get_page takes: a bad
    one gives page 1, one past the end the last page), recent jobs, members (admins see everything). An annotator's
    batches are the ones assigned to them."""
    every_assignment = Assignment.objects.filter(batch__project=project)
    listed = project.batches.order_by("position", "id")
    if role == Membership.Role.ANNOTATOR:
        every_assignment = every_assignment.filter(annotator=user)
        listed = listed.filter(pk__in=every_assignment.values("batch_id"))
    # Only the page's batches are read in full: their sample counts, assignments and reviews.
    pager = Paginator(listed, BATCHES_PER_PAGE).get_page(page_number)
    batches = list(pager)
    shown = [batch.pk for batch in batches]
    sample_counts = dict(
        Sample.objects.filter(batch_id__in=shown).order_by().values("batch_id").annotate(n=Count("id"))
        .values_list("batch_id", "n")
    )
    for batch in batches:
        batch.sample_count = sample_counts.get(batch.pk, 0)
    assignments = list(every_assignment.filter(batch_id__in=shown).select_related("annotator"))
    reviewed = {
        (row["sample__batch_id"], row["annotator_id"], row["round"]): (row["n"], row["done"])
        for row in SampleReview.objects.filter(sample__project=project, sample__batch_id__in=shown)
        .values("sample__batch_id", "annotator_id", "round")
        .annotate(n=Count("id"), done=Count("id", filter=Q(done=True)))
        .order_by()
    }
    # Each annotator's rounds of each batch, for the same frozen check the span writes make.
    states: dict[tuple[int, int], access.AssignmentStates] = {}
    for a in assignments:
        states.setdefault((a.batch_id, a.annotator_id), access.AssignmentStates(a.annotator_id, {})).rounds[a.round] = (
            a.status, a.reopened, a.submitted_at)
    def done_count(batch: Any, a: Assignment) -> int:
        n, done = reviewed.get((batch.pk, a.annotator_id, a.round), (0, 0))
        # Imported work is submitted without reviews: the same rule as the home page and the sample browser.
        return progress.done_count(
            batch.sample_count, reviewed=n, reviewed_done=done, submitted=a.status == Assignment.Status.SUBMITTED
        )

    # An annotator's own work, as the home page links it: per assignment, where Start or Continue leads.
    own_work = ({row["assignment"].pk: row for row in projects.batch_progress(user, project, batch_ids=shown)}
                if role == Membership.Role.ANNOTATOR else {})
    latest_round: dict[int, int] = {}
    by_batch: dict[int, list[Assignment]] = {}
    for a in assignments:
        latest_round[a.batch_id] = max(latest_round.get(a.batch_id, a.round), a.round)
        by_batch.setdefault(a.batch_id, []).append(a)
    rows = []
    for batch in batches:
        people = [
            {
                "assignment": a,
                "frozen": states[(batch.pk, a.annotator_id)].frozen(a.round),
                # A round with a later round open is frozen for everyone (freeze.reopen_round refuses it).
                "reopenable": states[(batch.pk, a.annotator_id)].frozen(a.round)
                and a.round == latest_round[batch.pk],
                "done": done_count(batch, a),
                "percent": round(100 * done_count(batch, a) / batch.sample_count) if batch.sample_count else 0,
                "work": own_work.get(a.pk),
            }
            for a in by_batch.get(batch.pk, [])
        ]
        # From the assignments loaded above (an admin's are every one of the batch's): no query per batch.
        ready, why = (rounds.reconciliation_state(by_batch.get(batch.pk, []))
                      if role == Membership.Role.ADMIN else (False, ""))
        rows.append({"batch": batch, "people": people, "round2_ready": ready, "round2_why": why})
    is_admin = role == Membership.Role.ADMIN
    can_export = role in (Membership.Role.ADMIN, Membership.Role.AUDITOR)
    members = (
        Membership.objects.filter(project=project).select_related("user").order_by("role", "user__username")
        if is_admin else []
    )
    return {
        "batches": rows,
        "batch_pages": pager,  # the page of batches shown; its paginator counts them all
        "jobs": job_lines(list(Job.objects.filter(project=project, kind=Job.Kind.EMBED)[:3]), role) if is_admin else [],
        "exports": job_lines(_export_jobs(project), role) if can_export else [],
        "can_export": can_export,
        "active_jobs": Job.objects.filter(project=project, status__in=[Job.Status.QUEUED, Job.Status.RUNNING]).exists(),
        "rounds": sorted(every_assignment.order_by().values_list("round", flat=True).distinct()) or [1],
        "members": members,
        "reopenings": freeze.reopenings(project) if is_admin else [],
        "annotators": [m.user for m in members if m.role == Membership.Role.ANNOTATOR
                       and m.user.has_usable_password()] if is_admin else [],
        "is_admin": is_admin,
        "sample_total": Sample.objects.filter(project=project).count(),
        # An annotator's share, by the home page's definition, so the two pages agree on what is theirs.
        "assigned_total": projects.assigned_sample_count(user, project) if role == Membership.Role.ANNOTATOR else None,
        "embedded": Sample.objects.filter(project=project, embedding_model=embedder.model_name()).count(),
        "passage_total": Passage.objects.filter(project=project).count(),
        "embedded_passages": Passage.objects.filter(project=project, embedding_model=embedder.model_name()).count(),
    }
