"""The consensus rule for one item: judges per item, two more on a split, strict majority of valid votes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

VALID = ("H", "N")
State = Literal["pending", "consensus", "no_consensus"]


@dataclass(frozen=True)
class Outcome:
    state: State
    label: str  # "H" or "N" with consensus, else ""
    judges_needed: int  # how many answers the item needs in all, given the answers so far


def majority_label(labels: list[str]) -> str:
    """The label with a strict majority of the valid (H/N) votes, or "" when there is none."""
    h = labels.count("H")
    n = labels.count("N")
    if h > n and h > 0:
        return "H"
    if n > h:
        return "N"
    return ""


def deciding_answers(labels: Sequence[str], judges_needed: int) -> list[str]:
    """The answers an item is decided on: its first ``judges_needed`` answers, in the order they arrived.

    The one rule for what counts. An item may hold more counted answers than
    it needs: a blocked judge's answers count again when they are unblocked,
    after other judges took their places. ``outcome`` decides on these answers
    and the agreement figures read the same ones, so an item at consensus
    never counts as one without; the later answers are kept and shown (the
    item's vote counters, the export) but decide nothing.
    """
    return list(labels[:judges_needed])


def outcome(labels: list[str], judges_per_item: int = 4, max_judges: int = 6, step: int = 2) -> Outcome:
    """Decide an item from its answers so far ("H", "N" or "?", in the order they arrived).

    The item first needs ``judges_per_item`` answers. When they are in and
    their valid votes have a strict majority, that is the consensus;
    otherwise ``step`` more judges are asked, up to ``max_judges``, and the
    decision is taken again on the first ``needed`` answers once they are
    all in; a split at the maximum is "no consensus". "?" answers count as
    judges but not as votes.
    """
    needed = judges_per_item
    while True:
        if len(labels) < needed:
            return Outcome("pending", "", needed)
        label = majority_label(deciding_answers(labels, needed))
        if label:
            return Outcome("consensus", label, needed)
        if needed >= max_judges:
            return Outcome("no_consensus", "", needed)
        needed = min(needed + step, max_judges)
