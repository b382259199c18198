"""The wizard's previews keep the trained detector and the pool's P(H) while nothing they depend on changes.

A spy on ``train_head`` counts the fits: in round 2 of ``detector_project``
(40 labelled items, 20 H and 20 N; no earlier detector) a fresh preview fits
the head once and cross-validates with min(5, 20, 20) = 5 folds, over
CV_REPEATS fold splits (40 items are few enough to repeat): 1 + 5 * 5 fits.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import cache

from annotate.models import PairConfig, PairItem, PairRound, Project
from annotate.services.pairs import config, detector, queue, rounds
from annotate.services.pairs.funnel import RoundPlan, preview_round
from tests.conftest import login
from tests.pairs.conftest import make_judges
from tests.pairs.factories_rounds import add_items
from tests.pairs.page_helpers import HTMX, OPEN, WIZARD, answer, funnel

pytestmark = pytest.mark.django_db

# The head, then 5 cross-validation folds for R in each of the repeated fold splits.
FITS_PER_FRESH_PREVIEW = 1 + 5 * detector.CV_REPEATS
WIDE = {"size": 100, "low": 0.0, "high": 1.0, "paraphrase_max": 1.0, "drop_fraction": 0.0, "seed": 5}
NARROW = {**WIDE, "low": 0.1, "high": 0.9, "paraphrase_max": 0.9, "drop_fraction": 1.0}


@pytest.fixture(autouse=True)
def empty_preview_cache() -> Iterator[None]:
    # Project and item ids repeat between tests; so would the kept entries.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def fits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every call of detector.train_head, by the number of items it was fitted on."""
    calls: list[int] = []
    original = detector.train_head

    def counting(vectors: Any, labels: Any, *, seed: int) -> detector.Head:
        calls.append(len(labels))
        return original(vectors, labels, seed=seed)

    monkeypatch.setattr(detector, "train_head", counting)
    return calls


def same_plan(kept: RoundPlan, fresh: RoundPlan) -> None:
    assert kept.refusal is None and fresh.refusal is None
    assert kept.selected == fresh.selected
    assert kept.funnel == fresh.funnel
    assert kept.ratio_dict() == fresh.ratio_dict()
    assert kept.promised_h_share == fresh.promised_h_share
    assert {**(kept.detector or {}), "train_seconds": 0} == {**(fresh.detector or {}), "train_seconds": 0}


def test_two_previews_with_other_thresholds_train_once_and_plan_as_a_fresh_computation(
    detector_project: Project, fits: list[int]
) -> None:
    wide = preview_round(detector_project, **WIDE, reuse_scores=True)
    assert fits == [40] + [32] * 5 * detector.CV_REPEATS  # the head on all 40, each fold's head on 4/5 of them
    narrow = preview_round(detector_project, **NARROW, reuse_scores=True)
    assert len(fits) == FITS_PER_FRESH_PREVIEW  # no new fit
    assert not wide.reused_scores and narrow.reused_scores

    # The thresholds did apply: all 30 pool items pass the wide band, the 20 at t = -1 and 1 the narrow one.
    assert [row["count"] for row in wide.funnel][:2] == [30, 30]
    assert [row["count"] for row in narrow.funnel][:4] == [30, 20, 16, 12]  # 4 paraphrases, then 4 date swaps
    same_plan(wide, preview_round(detector_project, **WIDE))
    same_plan(narrow, preview_round(detector_project, **NARROW))
    assert len(fits) == 3 * FITS_PER_FRESH_PREVIEW  # the fresh computations trained, as they should


def test_a_judgement_that_changes_the_labelled_items_retrains_and_one_that_does_not_keeps_the_detector(
    detector_project: Project, fits: list[int]
) -> None:
    first = PairRound.objects.get(project=detector_project, number=1)
    item = add_items(detector_project, [1.0], state=PairItem.State.OPEN, pair_round=first)[0]
    PairItem.objects.filter(pk=item.pk).update(judges_needed=4)
    judges = make_judges(detector_project, 4)
    settings = config.get_config(detector_project)
    preview_round(detector_project, **NARROW, reuse_scores=True)
    assert len(fits) == FITS_PER_FRESH_PREVIEW

    answer(item, judges[0], "H")  # one answer of the four the item needs: still open, nothing to learn yet
    queue.recount_items([item.pk], settings)
    assert preview_round(detector_project, **NARROW, reuse_scores=True).reused_scores
    assert len(fits) == FITS_PER_FRESH_PREVIEW

    for judge in judges[1:]:
        answer(item, judge, "H")
    queue.recount_items([item.pk], settings)
    assert PairItem.objects.get(pk=item.pk).state == PairItem.State.CONSENSUS  # 4 H of 4: a 41st labelled item
    retrained = preview_round(detector_project, **NARROW, reuse_scores=True)
    assert not retrained.reused_scores
    assert len(fits) == 2 * FITS_PER_FRESH_PREVIEW and fits[FITS_PER_FRESH_PREVIEW] == 41
    assert retrained.detector is not None and retrained.detector["trained_on"] == 41
    assert retrained.detector["trained_h"] == 21
    same_plan(retrained, preview_round(detector_project, **NARROW))


def test_another_seed_retrains(detector_project: Project, fits: list[int]) -> None:
    preview_round(detector_project, **NARROW, reuse_scores=True)
    other = preview_round(detector_project, **{**NARROW, "seed": 6}, reuse_scores=True)
    assert not other.reused_scores and len(fits) == 2 * FITS_PER_FRESH_PREVIEW
    assert preview_round(detector_project, **{**WIDE, "seed": 6}, reuse_scores=True).reused_scores
    # One entry per project: going back to seed 5 trains again.
    assert not preview_round(detector_project, **NARROW, reuse_scores=True).reused_scores
    assert len(fits) == 3 * FITS_PER_FRESH_PREVIEW


def test_a_kept_detector_still_refuses_when_min_counts_is_raised(detector_project: Project, fits: list[int]) -> None:
    preview_round(detector_project, **NARROW, reuse_scores=True)
    PairConfig.objects.filter(project=detector_project).update(min_counts=50)
    refused = preview_round(detector_project, **NARROW, reuse_scores=True)
    assert refused.reused_scores
    assert refused.refusal is not None and "Too few labelled items to train the detector: 40" in refused.refusal
    assert refused.refusal.endswith("at least 50 (the project's min_counts). Let the open round reach consensus "
                                    "on more items, or import labelled items.")


def test_creating_the_round_trains_for_real_and_draws_what_the_kept_preview_showed(
    detector_project: Project, admin_user: Any, fits: list[int]
) -> None:
    preview_round(detector_project, **WIDE, reuse_scores=True)
    kept = preview_round(detector_project, **NARROW, reuse_scores=True)
    assert kept.reused_scores and len(fits) == FITS_PER_FRESH_PREVIEW
    with pytest.raises(rounds.RoundRefused, match="reused an earlier preview's detector"):
        rounds.create_round_from_plan(detector_project, admin_user, kept, NARROW["size"])
    assert not PairRound.objects.filter(project=detector_project, number=2).exists()

    created = rounds.create_round(detector_project, admin_user, **NARROW)
    assert len(fits) == 2 * FITS_PER_FRESH_PREVIEW  # the round's own detector was trained
    assert created.detector is not None and created.detector.trained_on == 40
    drawn = sorted(created.items.values_list("pk", flat=True))
    assert drawn == [item_id for item_id, _ in kept.selected]


def test_the_wizard_moves_a_threshold_without_training_again(
    detector_project: Project, admin_user: Any, fits: list[int]
) -> None:
    client = login(admin_user)
    wide = funnel(client.get(WIZARD, OPEN, **HTMX).content.decode())
    assert len(fits) == FITS_PER_FRESH_PREVIEW
    narrow = funnel(client.get(WIZARD, {**OPEN, "low": "0.1", "high": "0.9"}, **HTMX).content.decode())
    assert len(fits) == FITS_PER_FRESH_PREVIEW
    assert (wide["pool"], wide["band"]) == (30, 30) and (narrow["pool"], narrow["band"]) == (30, 20)
