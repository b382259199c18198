"""Shared helpers and fixtures of the pairs admin page tests (project, round and flags pages)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import JudgeFlag, PairItem, PairJudgement, PairRound, Project
from annotate.services.pairs import config, flags, queue
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_rounds import add_items, add_training

HTMX = {"HTTP_HX_REQUEST": "true"}
PAGE = "/projects/pairs/"
WIZARD = "/projects/pairs/pairs/rounds/new/"
FLAGS = "/projects/pairs/pairs/flags/"
HADES_EXAMPLE = (Path(__file__).parent / "hades_example.jsonl").read_bytes()
# The wizard's fields with a band that keeps everything: every funnel count is then worked out from the fixture.
OPEN = {"size": "100", "low": "0", "high": "1", "paraphrase_max": "1", "drop_fraction": "0", "seed": "5"}


def text_of(html: str, pattern: str) -> str:
    """The first group of ``pattern`` in the page, or a failure saying what was looked for."""
    found = re.search(pattern, html, re.S)
    assert found, f"{pattern!r} not in the page"
    return found.group(1).strip()


def funnel(html: str) -> dict[str, int]:
    """Each funnel step's count, by its data-step."""
    block = text_of(html, r'(<table class="grid funnel" data-role="funnel">.*?</table>)')
    return {step: int(count) for step, count in
            re.findall(r'<tr data-step="([a-z_]+)">.*?data-role="count">(\d+)<', block, re.S)}


def answer(item: PairItem, judge: Any, label: str, seconds: float = 20.0) -> PairJudgement:
    now = timezone.now()
    return PairJudgement.objects.create(item=item, judge=judge, round=item.round, label=label,
                                        served_at=now - timezone.timedelta(seconds=seconds), answered_at=now,
                                        seconds=seconds)


@pytest.fixture
def detector_project(pairs_project: Project) -> Project:
    """Round 1 done (40 consensus items, 20 H, 20 N) and a pool of 30 with known paraphrase similarities and swaps.

    The detector learns P(H) of about 0.25 at t = -1 and 0.75 at t = 1 (inside a [0.1, 0.9] band) and about
    0 and 1 at t = -2 and 2 (outside it); see tests/pairs/factories_rounds.py.
    """
    first = PairRound.objects.create(project=pairs_project, number=1, size=40, seed=1, status=PairRound.Status.CLOSED)
    add_training(pairs_project, {-2: (0, 8), -1: (2, 6), 0: (4, 4), 1: (6, 2), 2: (8, 0)}, pair_round=first)
    # In the band: 20 items, of which 4 are paraphrases (0.95) and 4 date swaps among the 16 others.
    in_band = [-1.0] * 10 + [1.0] * 10
    paraphrase = [0.95 if index % 5 == 0 else 0.5 for index in range(20)]
    swaps = ["date" if index % 5 == 1 else "" for index in range(20)]
    add_items(pairs_project, in_band, paraphrase=paraphrase, swaps=swaps)
    add_items(pairs_project, [-2.0] * 5 + [2.0] * 5)
    return pairs_project


@pytest.fixture
def flagged(pairs_project: Project, bob: Any) -> JudgeFlag:
    """bob answered 12 items in 3.2 s each (H and N in turn): the flags page's refresh keeps his too_fast flag."""
    items = make_pair_items(pairs_project, 12)
    for index, item in enumerate(items):
        answer(item, bob, "HN"[index % 2], seconds=3.2)
    queue.recount_items([item.pk for item in items], config.get_config(pairs_project))
    flags.check_judge(pairs_project, bob)
    return JudgeFlag.objects.get(project=pairs_project, judge=bob, rule=JudgeFlag.Rule.TOO_FAST)
