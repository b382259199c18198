"""Why a round may not be drawn now: another round job of the project is queued or running, or the round asked
for is no longer the next one (a second admin's round was drawn meanwhile).

``create_round`` and ``start_round_job`` run these checks under the project's row lock, so two requests cannot both
pass them; the wizard words the stale-number refusal for its own page (``stale_wizard_refusal``).
"""

from __future__ import annotations

from annotate.models import Job, PairRound, Project
from annotate.services.pairs.funnel import next_round_number


def active_round_job(project: Project) -> Job | None:
    """The project's round job that is queued or running (the oldest); None if none."""
    return (Job.objects.filter(project=project, kind=Job.Kind.PAIR_ROUND,
                               status__in=[Job.Status.QUEUED, Job.Status.RUNNING])
            .select_related("created_by").order_by("created_at", "id").first())


def round_job_busy(project: Project) -> str | None:
    """Why no round may start now: a round job of the project is queued or running; None when none is."""
    busy = active_round_job(project)
    if busy is None:
        return None
    number = busy.options.get("number") or next_round_number(project)
    starter = f", started by {busy.created_by.get_username()}" if busy.created_by else ""
    return f"Round {number} is being created (job {busy.pk}{starter}); wait for it."


def _stale_number(project: Project, number: int | None) -> str | None:
    """Why round ``number`` can no longer be drawn (another round is the next one now); None when it can."""
    if number is None:
        return None
    expected = next_round_number(project)
    if number == expected:
        return None
    existing = PairRound.objects.filter(project=project, number=number).select_related("created_by").first()
    if existing is None:
        return f"Round {number} is not the next round (round {expected} is); open the wizard again."
    return f"Round {number} was created meanwhile {_created_by(existing)}; open the wizard again."


def stale_wizard_refusal(project: Project, submitted: int, showing: int) -> str | None:
    """The refusal of a wizard submitted for round ``submitted`` when the page now plans round ``showing``, worded
    for the wizard that shows it (the page already holds round ``showing``'s form and preview, so "open the wizard
    again" would send the admin where they are); None when ``submitted`` is still the next round."""
    if submitted == showing:
        return None
    now_plans = f"This wizard now plans round {showing}: check the preview, then create it."
    existing = PairRound.objects.filter(project=project, number=submitted).select_related("created_by").first()
    if existing is None:
        return f"Round {submitted} is not the next round. {now_plans}"
    return f"Round {submitted} was created meanwhile ({_drawn_by(existing)}). {now_plans}"


def _drawn_by(pair_round: PairRound) -> str:
    """Who drew a round, in a parenthesis's words: its job and who started it, the admin, or the command line."""
    job = (Job.objects.filter(project_id=pair_round.project_id, kind=Job.Kind.PAIR_ROUND,
                              options__round_id=pair_round.pk).select_related("created_by").order_by("id").first())
    starter = (job.created_by if job is not None else None) or pair_round.created_by
    by = f"by {starter.get_username()}" if starter is not None else ""
    if job is not None:
        return f"job {job.pk}, {by}" if by else f"job {job.pk}"
    return by or "outside the wizard: the pairs_round command or a script"


def _created_by(pair_round: PairRound) -> str:
    """Who drew a round, in words: its job, else the admin, else the command line or a script."""
    job = (Job.objects.filter(project_id=pair_round.project_id, kind=Job.Kind.PAIR_ROUND,
                              options__round_id=pair_round.pk).order_by("id").first())
    if job is not None:
        return f"by job {job.pk}"
    if pair_round.created_by is not None:
        return f"by {pair_round.created_by.get_username()}"
    return "outside the wizard (the pairs_round command or a script)"
