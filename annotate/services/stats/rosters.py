"""Rounds and rosters: which rounds a project has, and who submitted each batch in a round."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotate.models import Assignment, Batch, Project


@dataclass
class _Roster:
    """Who submitted each batch in a round, and who of them counts for agreement."""

    submitted: dict[int, list[str]] = field(default_factory=dict)  # batch id -> usernames
    submitted_ids: dict[int, list[int]] = field(default_factory=dict)  # batch id -> user ids, same order
    agreement: dict[int, list[str]] = field(default_factory=dict)
    usernames: dict[int, str] = field(default_factory=dict)  # user id -> username


def project_rounds(project: Project) -> list[int]:
    return sorted(set(Assignment.objects.filter(batch__project=project).values_list("round", flat=True)))


def _check_round(project: Project, round: int) -> None:
    if isinstance(round, bool) or not isinstance(round, int) or round < 1:
        raise ValueError(f"round must be a positive whole number, not {round!r}")
    if not Assignment.objects.filter(batch__project=project, round=round).exists():
        raise ValueError(no_round_message(project, round, project_rounds(project)))


def no_round_message(project: Project, round: int, known: list[int]) -> str:
    """Why a round's figures cannot be given; with nothing assigned at all, said without naming a round the caller
    may never have sent (the figures' round defaults to 1)."""
    if not known:
        return (f"project {project.slug!r} has no round {round}: no batch of it is assigned to annotators yet, and "
                "these figures count assigned work (round defaults to 1)")
    return f"project {project.slug!r} has no round {round} (rounds with assignments: {', '.join(map(str, known))})"


def _roster(project: Project, round: int, batch_id: int | None = None) -> _Roster:
    roster = _Roster()
    rows = Assignment.objects.filter(batch__project=project, round=round, status=Assignment.Status.SUBMITTED)
    if batch_id is not None:
        rows = rows.filter(batch_id=batch_id)
    rows = rows.order_by("batch_id", "annotator__username").values_list(
        "batch_id", "annotator_id", "annotator__username", "excluded_from_agreement"
    )
    for batch_id_, user_id, username, excluded in rows:
        roster.usernames[user_id] = username
        roster.submitted.setdefault(batch_id_, []).append(username)
        roster.submitted_ids.setdefault(batch_id_, []).append(user_id)
        people = roster.agreement.setdefault(batch_id_, [])
        if not excluded:
            people.append(username)
    return roster


def batch_submitters(project: Project, round: int) -> dict[int, list[int]]:
    """Batch id -> ids of the annotators who submitted it in the round ("the batch's annotators")."""
    return _roster(project, round).submitted_ids


def _batches_in_round(project: Project, roster: _Roster) -> list[tuple[int, str]]:
    return [
        (batch_id, name)
        for batch_id, name in Batch.objects.filter(project=project).order_by("position", "id").values_list("id", "name")
        if batch_id in roster.submitted
    ]
