"""What the pages of a pairs project show: counts, rounds with their agreement figures, jobs, flags. Reads only."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Q

from annotate.models import (
    BlockedJudge,
    Job,
    JudgeFlag,
    Membership,
    PairItem,
    PairJudgement,
    PairOriginal,
    PairRound,
    PerturbedText,
    Project,
)
from annotate.services import members
from annotate.services.jobs import job_wait
from annotate.services.pairs import agreement, config, perturb, queue, vectors

PAIR_JOB_KINDS = (Job.Kind.PERTURB, Job.Kind.PAIR_VECTORS, Job.Kind.PAIR_ROUND)
# Roles that see everyone's work: the figures, the rounds, the flags. Annotators work blind.
REVIEWER_ROLES = (Membership.Role.ADMIN, Membership.Role.AUDITOR, Membership.Role.CURATOR)


def sees_figures(role: str) -> bool:
    return role in REVIEWER_ROLES


def item_counts(project: Project) -> list[dict[str, Any]]:
    """Items per state, every state listed (zeros too), in the order an item moves through them."""
    counts = dict(
        PairItem.objects.filter(project=project).values_list("state").annotate(n=Count("id")).order_by()
    )
    return [{"state": state, "name": label, "count": counts.get(state, 0)} for state, label in PairItem.State.choices]


def rounds_with_figures(project: Project, overall: dict[str, Any]) -> list[dict[str, Any]]:
    """Every round with its items by state and its agreement figures (from the overall report's ``rounds``)."""
    rounds = PairRound.objects.filter(project=project).annotate(
        item_total=Count("items"),
        open_items=Count("items", filter=Q(items__state=PairItem.State.OPEN)),
        consensus_items=Count("items", filter=Q(items__state=PairItem.State.CONSENSUS)),
        none_items=Count("items", filter=Q(items__state=PairItem.State.NO_CONSENSUS)),
    )
    figures = {row["round"]: row for row in overall.get("rounds", [])}
    return [{"round": pair_round, "agreement": figures.get(pair_round.number, {})} for pair_round in rounds]


def pair_jobs(project: Project, vector_counts: vectors.VectorCounts | None = None) -> list[Job]:
    """The latest jobs of the project; a span-vector job only while some item still lacks its vector.

    Once every item has its vector, a vector job still queued or stopped
    (nothing to do for it) would show a progress that is not the items' state.
    """
    jobs = list(Job.objects.filter(project=project, kind__in=PAIR_JOB_KINDS)[:5])
    if vector_counts is not None and not vector_counts.missing:
        jobs = [job for job in jobs if job.kind != Job.Kind.PAIR_VECTORS]
    return jobs


def block_of(project: Project, user: AbstractBaseUser) -> BlockedJudge | None:
    """The user's block in the project, if an admin blocked them."""
    return BlockedJudge.objects.filter(project=project, judge=user).first()


def admin_names(project: Project) -> list[str]:
    """The usernames of the project's admins: whom a blocked judge asks about their block."""
    return list(
        Membership.objects.filter(project=project, role=Membership.Role.ADMIN)
        .order_by("user__username")
        .values_list("user__username", flat=True)
    )


def judge_standing(project: Project, user: AbstractBaseUser) -> dict[str, Any]:
    """What an annotator's project page says about their own work.

    Unblocked: their progress (counted answers, items left). Blocked: the block
    and every answer they gave. Progress would mislead there: none of a blocked
    judge's answers counts, so it reads 0, and its items left are items the
    queue refuses to serve them.
    """
    block = block_of(project, user)
    if block is None:
        return {"progress": queue.judge_progress(project, user), "judge_block": None, "can_label": True}
    given = PairJudgement.objects.filter(item__project=project, judge=user, answered_at__isnull=False).count()
    # Not "block": templates that extend another take that name for the block being rendered.
    return {"judge_block": block, "answers_given": given, "can_label": False}


def judge_rows(projects: Iterable[Project], user: AbstractBaseUser) -> list[dict[str, Any]]:
    """The home page's line for each pairs project the user judges in: their progress (with the labeling link), or,
    once an admin blocked them, the block alone: the queue refuses them every item, and their project page says why
    and whom to ask."""
    return [{"project": project, **judge_standing(project, user)} for project in projects]


def pair_project_overview(project: Project, user: AbstractBaseUser, role: str) -> dict[str, Any]:
    """The project page's figures. An annotator gets their own progress only: no counts of others' work."""
    if not sees_figures(role):
        return {**judge_standing(project, user), "sees_figures": False, "is_admin": False}
    judgements = PairJudgement.objects.filter(item__project=project).exclude(label="")
    span_vectors = vectors.vector_counts(project, vectors.encoder_name(project))
    jobs = pair_jobs(project, span_vectors)
    overall = agreement.current_pair_agreement(project)
    rounds = rounds_with_figures(project, overall)
    is_admin = role == Membership.Role.ADMIN
    return {
        "sees_figures": True,
        "is_admin": is_admin,
        # Auditors and curators do not judge, and the queue refuses a blocked admin: no link to a page that says 403.
        "can_label": role in queue.JUDGE_ROLES and block_of(project, user) is None,
        "can_export": role in (Membership.Role.ADMIN, Membership.Role.AUDITOR),
        "originals": PairOriginal.objects.filter(project=project).count(),
        "unperturbed": perturb.pending_originals(project).count(),
        "perturbed_texts": PerturbedText.objects.filter(project=project).count(),
        "items_by_state": item_counts(project),
        "item_total": span_vectors.items,
        "span_vectors": span_vectors,
        "judgements": judgements.filter(counted=True).count(),
        "judgements_not_counted": judgements.filter(counted=False).count(),
        "jobs": jobs,
        "active_jobs": any(job.is_active for job in jobs),
        # While a perturbation runs its originals are being claimed: the section says so instead of offering a start,
        # with how long it has waited and its cancel (admins).
        **_perturbation_state(project, is_admin),
        "rounds": rounds,
        "next_round": (rounds[-1]["round"].number + 1) if rounds else 1,
        "overall_agreement": overall,
        "open_flags": JudgeFlag.objects.filter(project=project, status=JudgeFlag.Status.OPEN).count(),
        "blocked_judges": BlockedJudge.objects.filter(project=project).count(),
        "missing_models": config.missing_model_settings(project) if is_admin else [],
        "config": config.get_config(project),
    }


def _perturbation_state(project: Project, is_admin: bool) -> dict[str, Any]:
    """Whether a perturbation job is queued or running; for admins, the job and its wait (the section's cancel)."""
    active = perturb.active_perturbation(project)
    shown = active if is_admin else None
    return {"perturbing": active is not None, "perturbation_job": shown,
            "perturbation_wait": job_wait(shown) if shown is not None else None}


def pair_member_rows(project: Project) -> list[dict[str, Any]]:
    """The members page's table for a pairs project: each member with the answers they gave and whether blocked.

    Pairs projects have no batches, so the span table's assignments say nothing
    here; what an admin weighs before changing a role or removing someone is
    the judge's answers. ``answers_given`` counts every answer, a blocked
    judge's too (shown with the block, as none of theirs counts).
    """
    rows = members.member_rows(project)
    given = dict(
        PairJudgement.objects.filter(item__project=project, answered_at__isnull=False)
        .values_list("judge_id").annotate(n=Count("id")).order_by()
    )
    blocked = set(BlockedJudge.objects.filter(project=project).values_list("judge_id", flat=True))
    for row in rows:
        user_id = row["user"].pk
        row["judges"] = row["membership"].role in queue.JUDGE_ROLES or user_id in given
        row["answers_given"] = given.get(user_id, 0)
        row["blocked"] = user_id in blocked
    return rows
