"""Agreement figures of a pairs project, overall or for one round, from its counted answered judgements.

``answers_by_item`` is the one place that picks, per item, the answers its
consensus and these figures rest on; the pairs export reads it too, so the
votes a file gives are the votes the figures count. Pages and the API read
``current_pair_agreement``: the figures kept for the current data version, so
a view of unchanged data reads one row rather than every judgement again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from annotate.models import PairItem, PairJudgement, PairRound, Project
from annotate.pairmath.agreement import agreement_figures
from annotate.pairmath.consensus import deciding_answers
from annotate.services import results_cache

# Judging is finished for these items; open items would pull the shares down while judges work,
# and items labelled on import have no votes.
FINISHED = (PairItem.State.CONSENSUS, PairItem.State.NO_CONSENSUS)


class UnknownRound(ValueError):
    """The project has no round with that number."""


@dataclass(frozen=True)
class ItemAnswers:
    """An item's answers by judges who are not blocked, in answer order, split by the consensus rule."""

    round_number: int | None
    deciding: list[str]  # the first judges_needed: the item's state and the agreement figures rest on these
    extra: list[str]  # answers past those (a judge unblocked after others took their places): they decide nothing


def answers_by_item(judgements: QuerySet[PairJudgement]) -> dict[int, ItemAnswers]:
    """Per item id, the counted answered judgements among ``judgements``, split into deciding and extra answers.

    The caller narrows ``judgements`` to the items it reports on (a project,
    a state, a round); this function keeps the counted (judge not blocked),
    answered ones and orders them as the queue's ``recompute_item`` does
    (answer time, then id), then applies ``consensus.deciding_answers`` with
    each item's ``judges_needed``. Items without such judgements are absent.
    One query.
    """
    rows = (
        judgements.filter(counted=True, answered_at__isnull=False)
        .exclude(label="")
        .order_by("item_id", "answered_at", "id")
        .values_list("item_id", "item__round__number", "item__judges_needed", "label")
    )
    labels: dict[int, list[str]] = {}
    round_of_item: dict[int, int | None] = {}
    judges_needed: dict[int, int] = {}
    for item_id, number, needed, label in rows:
        labels.setdefault(item_id, []).append(label)
        round_of_item[item_id] = number
        judges_needed[item_id] = needed
    split: dict[int, ItemAnswers] = {}
    for item_id, answers in labels.items():
        deciding = deciding_answers(answers, judges_needed[item_id])
        split[item_id] = ItemAnswers(round_of_item[item_id], deciding, answers[len(deciding):])
    return split


def pair_agreement(project: Project, round_number: int | None = None) -> dict[str, Any]:
    """``{alpha, items, consensus, agree80, unanimous, no_consensus, reason, round}`` over the finished items.

    Counts only judgements that are counted (the judge is not blocked) and
    answered, and of an item only those that decided it: its first
    ``judges_needed`` in answer order (``consensus.deciding_answers``, the rule
    the item's state comes from). Answers past those, which an item gets when
    a judge is unblocked after others took their places, are left out. An
    item enters when its state is consensus or no consensus and it has such
    judgements (items labelled on import have none). Overall
    (``round_number`` None) the report adds ``rounds``: the same figures for
    every round of the project, in round order. A round number the project
    does not have raises ``UnknownRound``. Two queries whatever the number
    of items.
    """
    round_numbers = list(PairRound.objects.filter(project=project).order_by("number").values_list("number", flat=True))
    if round_number is not None and round_number not in round_numbers:
        raise UnknownRound(
            f"project {project.slug!r} has no round {round_number} "
            f"(rounds: {', '.join(map(str, round_numbers)) or 'none'})"
        )
    judgements = PairJudgement.objects.filter(item__project=project, item__state__in=FINISHED)
    if round_number is not None:
        judgements = judgements.filter(item__round__number=round_number)
    answers = answers_by_item(judgements)
    report = agreement_figures([found.deciding for found in answers.values()]).as_dict()
    report["round"] = round_number
    if round_number is None:
        by_round: dict[int | None, list[list[str]]] = defaultdict(list)
        for found in answers.values():
            by_round[found.round_number].append(found.deciding)
        # Every round is listed, finished items or not; items outside any round (none expected) come last.
        listed: list[int | None] = [*round_numbers, *([None] if None in by_round else [])]
        report["rounds"] = [{"round": number, **agreement_figures(by_round[number]).as_dict()} for number in listed]
    return report


def current_pair_agreement(project: Project, round_number: int | None = None) -> dict[str, Any]:
    """``pair_agreement`` as of the current data: kept figures when the data version is unchanged since they were
    computed, else computed now and kept (results_cache.current_figures; never stale). Raises ``UnknownRound`` as
    pair_agreement does."""
    return results_cache.current_figures(project, "pair-agreement", round_number=round_number)
