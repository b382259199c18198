"""The demo pairs project that `make run` loads: items, a judged first round, a flagged spammer, a round-2 preview."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import krippendorff
import numpy as np
import pytest

from annotate.models import JudgeFlag, PairItem, PairJudgement, PairRound, Project
from annotate.services.demo import load_demo_data
from annotate.services.pairs import rounds
from annotate.services.pairs.agreement import pair_agreement
from annotate.services.pairs.demo import (
    DEMO_JUDGED_ITEMS,
    DEMO_PAIR_JUDGEMENTS_FILE,
    DEMO_PAIRS_FILE,
    DEMO_PAIRS_SLUG,
    DEMO_ROUND_SIZE,
)


@pytest.fixture
def demo_pairs(db: None, django_capture_on_commit_callbacks: Any) -> Iterator[Project]:
    from config.celery import app

    # The embedding and span-vector jobs run in-process when the load commits (the app's conf, not the
    # Django setting: Celery reads settings once, so a later settings change does not reach it).
    before = (app.conf.task_always_eager, app.conf.task_eager_propagates)
    app.conf.task_always_eager, app.conf.task_eager_propagates = True, True
    try:
        with django_capture_on_commit_callbacks(execute=True):
            load_demo_data()
        yield Project.objects.get(slug=DEMO_PAIRS_SLUG)
    finally:
        app.conf.task_always_eager, app.conf.task_eager_propagates = before


def test_demo_pair_file_holds_the_words_it_names() -> None:
    rows = [json.loads(line) for line in DEMO_PAIRS_FILE.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 72
    for row in rows:
        assert row["original"][row["original_start"]:row["original_end"]] == row["original_words"]
        assert row["perturbed"][row["perturbed_start"]:row["perturbed_end"]] == row["perturbed_words"]
        assert row["original_words"] != row["perturbed_words"]


def test_demo_pairs_project_has_a_judged_first_round_and_a_pool(demo_pairs: Project) -> None:
    items = PairItem.objects.filter(project=demo_pairs)
    assert items.count() == 72
    first = PairRound.objects.get(project=demo_pairs, number=1)
    assert first.items.count() == DEMO_ROUND_SIZE
    assert items.filter(state=PairItem.State.POOL).count() == 72 - DEMO_ROUND_SIZE
    judged = PairJudgement.objects.filter(item__project=demo_pairs).values("item").distinct().count()
    assert judged == DEMO_JUDGED_ITEMS
    # Every judged item has its four answers; the split ones wait for two more judges.
    for item in items.filter(round=first).exclude(judgements=None):
        assert item.answered == 4
        if item.state == PairItem.State.OPEN:
            assert item.judges_needed == 6 and item.votes_h == item.votes_n
        else:
            assert item.state == PairItem.State.CONSENSUS and item.label in {"H", "N"}
    # Every item has its span vector, so the round-2 wizard can train at once.
    assert items.filter(vector__isnull=True).count() == 0


def test_demo_spammer_is_flagged_and_honest_judges_mostly_not(demo_pairs: Project) -> None:
    rules = {flag.rule for flag in JudgeFlag.objects.filter(project=demo_pairs, judge__username="frank")}
    assert {JudgeFlag.Rule.SAME_LABEL, JudgeFlag.Rule.TOO_FAST} <= rules
    assert not JudgeFlag.objects.filter(project=demo_pairs, judge__username="carol").exists()


def test_demo_agreement_equals_krippendorff_on_the_fixture_votes(demo_pairs: Project) -> None:
    finished = set(
        PairItem.objects.filter(
            project=demo_pairs, state__in=[PairItem.State.CONSENSUS, PairItem.State.NO_CONSENSUS]
        ).values_list("external_id", flat=True)
    )
    votes: dict[str, dict[str, str]] = defaultdict(dict)
    for line in DEMO_PAIR_JUDGEMENTS_FILE.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry["item_id"] in finished:
            votes[entry["item_id"]][entry["judge"]] = entry["label"]
    judges = sorted({judge for answers in votes.values() for judge in answers})
    table = np.array(
        [[{"H": 1.0, "N": 0.0}.get(votes[item].get(judge, ""), np.nan) for item in sorted(votes)] for judge in judges]
    )
    expected = krippendorff.alpha(reliability_data=table, level_of_measurement="nominal")
    figures = pair_agreement(demo_pairs)
    assert figures["items"] == len(finished) > 0
    assert figures["alpha"] == pytest.approx(expected, abs=1e-4)
    labels = Counter(PairItem.objects.filter(external_id__in=finished).values_list("label", flat=True))
    assert labels["H"] > 0 and labels["N"] > 0


def test_demo_round_two_preview_trains_a_detector_and_draws_items(demo_pairs: Project) -> None:
    plan = rounds.preview_round(demo_pairs, size=10, low=0.05, high=0.95, seed=3)
    assert plan.refusal is None, plan.refusal
    assert plan.funnel[0]["count"] == 72 - DEMO_ROUND_SIZE
    assert len(plan.selected) > 0
    assert PairRound.objects.filter(project=demo_pairs).count() == 1  # a preview changes nothing
