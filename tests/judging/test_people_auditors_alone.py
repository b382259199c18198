"""Alpha among the auditors alone is the people's own: computed from every answered audit, whatever the judge did.

Before, it only saw the items the judge had scored, so a judge that scored none of them made the page say
"fewer than two auditors have answered (0)" although two had."""

from __future__ import annotations

from typing import Any

import krippendorff
import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.models import Batch
from judging.models import Audit, AuditItem, Judge, Judgement, JudgeRun
from judging.people import AuditRating, alpha_among_auditors, alpha_with_judge, people_figures
from judging.services.people import judge_vs_people
from tests.conftest import login

# Two auditors, three items (rows: ann, ben; columns: x, y, z); the judge has no figure for any of them.
SCORES = {"ann": [2, 4, 5], "ben": [1, 4, 3]}
ITEMS = ["x", "y", "z"]


def unjudged() -> list[AuditRating]:
    return [AuditRating(item, auditor, score, None)
            for auditor, scores in SCORES.items() for item, score in zip(ITEMS, scores, strict=True)]


def package_alpha(level: str) -> float:
    return krippendorff.alpha(reliability_data=np.array(list(SCORES.values()), dtype=float),
                              level_of_measurement=level, value_domain=[1, 2, 3, 4, 5])


@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_auditors_alone_need_no_judge_figure(level: str) -> None:
    found = alpha_among_auditors(unjudged(), level)
    assert found.value == pytest.approx(package_alpha(level))
    assert (found.items, found.raters, found.reason) == (3, 2, None)
    with_judge = alpha_with_judge(unjudged(), level)
    assert with_judge.value is None and with_judge.reason == "no audited item has a score from this judge"


def test_interval_alpha_of_the_small_case_by_hand() -> None:
    # Values 2, 1 | 4, 4 | 5, 3: Do = (2 x 1 + 0 + 2 x 4) / 6 = 10 / 6; De = 130 / 30 (the six values 1, 2, 3, 4,
    # 4, 5: their squared differences sum to 65 over unordered pairs, 130 over ordered ones);
    # alpha = 1 - (10 / 6) / (130 / 30) = 1 - 5 / 13 = 8 / 13.
    assert alpha_among_auditors(unjudged(), "interval").value == pytest.approx(8 / 13)


def test_people_figures_set_the_judge_against_nothing_but_still_give_the_auditors_alpha() -> None:
    figures = people_figures(unjudged(), flagged={"x"}, flag_at_most=3)
    assert (figures["items"], figures["pairs"], figures["auditors"]) == (0, 0, 0)
    for level in ("ordinal", "interval"):
        assert figures[f"alpha_{level}_auditors"] == pytest.approx(package_alpha(level))
        assert figures[f"alpha_{level}_auditors_items"] == 3
        assert figures[f"alpha_{level}_with_judge"] is None
        assert f"alpha_{level}_auditors" not in figures["reasons"]
    assert sum(map(sum, figures["confusion"])) == 0
    assert figures["mean_residual"] is None and figures["flags_confirmed"] is None


def test_a_judged_item_among_unjudged_ones_counts_once_with_the_judge_and_the_auditors_see_all() -> None:
    ratings = [*unjudged(), AuditRating("w", "ann", 2, 2.0), AuditRating("w", "ben", 3, 2.0)]
    figures = people_figures(ratings, flagged=set(), flag_at_most=3)
    assert (figures["items"], figures["pairs"], figures["auditors"]) == (1, 2, 2)
    matrix = np.array([[2, 4, 5, 2], [1, 4, 3, 3]], dtype=float)
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval")
    assert figures["alpha_interval_auditors"] == pytest.approx(expected)
    assert figures["mean_residual"] == pytest.approx(((2 - 2) + (3 - 2)) / 2)


@pytest.mark.django_db
def test_the_page_gives_the_auditors_alpha_when_the_judge_scored_none_of_the_audited_outputs(
    batch: Batch, admin_user: Any, alice: Any
) -> None:
    project = batch.project
    samples = list(batch.samples.order_by("position"))
    judge = Judge.objects.create(project=project, name="llm", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                 model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    for sample in samples[:2]:  # it could not be read on two; it never judged the third
        Judgement.objects.create(run=run, sample=sample, status="parse_error", raw="a four, I think")
    now = timezone.now()
    for sample, admin_score, alice_score in zip(samples, (2, 4, 5), (1, 4, 3), strict=True):
        item = AuditItem.objects.create(project=project, sample=sample, reason="test")
        Audit.objects.create(item=item, auditor=admin_user, score=admin_score, served_at=now)
        Audit.objects.create(item=item, auditor=alice, score=alice_score, served_at=now)

    figures = judge_vs_people(project, judge)
    assert figures["items_without_judge_score"] == 3 and figures["items"] == 0
    for level in ("ordinal", "interval"):
        assert figures[f"alpha_{level}_auditors"] == pytest.approx(package_alpha(level))
        assert figures[f"alpha_{level}_with_judge"] is None

    page = login(admin_user).get(reverse("judging-people", args=[project.slug, judge.pk])).content.decode()
    assert "fewer than two auditors" not in page
    assert f'data-role="alpha-auditors" data-alpha="{package_alpha("interval"):.6f}"' in page
    assert 'data-role="alpha-with-judge" data-alpha=""' in page
