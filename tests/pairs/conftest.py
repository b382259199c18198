"""Fixtures of the pairs workflow: a pairs project (adam admin, alice and bob annotators) and an item factory."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Membership, PairConfig, PairItem, PairOriginal, PairRound, PerturbedText, Project

ORIGINAL = "The bridge opened in 1911. It carries two lanes and a footpath. Mayor Ines Varga reopened it in March."
# (original words, perturbed words) swapped in the third sentence of each made-up text.
SWAPS = [("Ines Varga", "Tom Price"), ("March", "June"), ("reopened", "closed"), ("footpath", "walkway")]


def make_pair_items(
    project: Project, count: int, *, round_number: int | None = 1, seed_text: str = ORIGINAL
) -> list[PairItem]:
    """``count`` items, one perturbed text each; in an open round ``round_number`` (created if missing) or the pool."""
    pair_round = None
    if round_number is not None:
        pair_round, _ = PairRound.objects.get_or_create(
            project=project, number=round_number, defaults={"size": count, "seed": 1}
        )
    config = PairConfig.objects.get_or_create(project=project)[0]
    items = []
    start_index = PairOriginal.objects.filter(project=project).count()
    for index in range(start_index, start_index + count):
        old, new = SWAPS[index % len(SWAPS)]
        original = PairOriginal.objects.create(project=project, external_id=f"o{index}", text=seed_text)
        o_start = seed_text.index(old)
        perturbed_text = seed_text[:o_start] + new + seed_text[o_start + len(old):]
        perturbed = PerturbedText.objects.create(
            project=project, original=original, text=perturbed_text, source=PerturbedText.Source.PAIRS
        )
        items.append(
            PairItem.objects.create(
                project=project, perturbed=perturbed, external_id=f"i{index}",
                original_start=o_start, original_end=o_start + len(old), original_words=old,
                perturbed_start=o_start, perturbed_end=o_start + len(new), perturbed_words=new,
                state=PairItem.State.OPEN if pair_round else PairItem.State.POOL,
                round=pair_round, judges_needed=config.judges_per_item if pair_round else 0,
                selection={"method": "random"} if pair_round else {},
            )
        )
    return items


@pytest.fixture
def pairs_project(admin_user: Any, alice: Any, bob: Any) -> Project:
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=project)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    Membership.objects.create(project=project, user=alice, role=Membership.Role.ANNOTATOR)
    Membership.objects.create(project=project, user=bob, role=Membership.Role.ANNOTATOR)
    return project


# --- the queue's helpers (judges, a clock the tests move) ---------------------------------------------------


def make_judges(project: Project, count: int, *, prefix: str = "judge") -> list[Any]:
    """``count`` annotators of the project, named prefix-00, prefix-01, ..."""
    from tests.conftest import make_user

    judges = []
    for index in range(count):
        user = make_user(f"{prefix}-{index:02d}")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        judges.append(user)
    return judges


class Clock:
    """The queue's clock (annotate.services.pairs.queue.locks.now), moved by hand: fast or slow judges, no sleeping."""

    def __init__(self) -> None:
        from datetime import UTC, datetime

        self.moment = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)

    def __call__(self) -> Any:
        return self.moment

    def advance(self, seconds: float) -> None:
        from datetime import timedelta

        self.moment += timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    from annotate.services.pairs.queue import locks

    moved = Clock()
    monkeypatch.setattr(locks, "now", moved)
    return moved


# The admin page tests' fixtures live with their helpers; imported last, as page_helpers imports from this module.
from tests.pairs.page_helpers import detector_project, flagged  # noqa: E402, F401, I001
