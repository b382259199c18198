"""The "disagrees" spammer rule compares each answer of a judge with the majority of the OTHER judges' answers
among those that decided the item, so answers past them (a judge unblocked after others took their places)
sway no one's figure, as they sway no other figure."""

from __future__ import annotations

import random
from typing import Any

import pytest

from annotate.models import JudgeFlag, PairConfig, PairItem, PairJudgement, Project
from annotate.pairmath import spam
from annotate.pairmath.consensus import deciding_answers
from annotate.pairmath.spam import JudgeAnswer
from annotate.services.pairs import flags, queue
from tests.pairs.conftest import Clock, make_judges, make_pair_items

pytestmark = pytest.mark.django_db


def answer(project: Project, judge: Any, item: PairItem, label: str, clock: Clock) -> None:
    served = queue.serve_next_item(project, judge)
    assert served is not None and served.item_id == item.pk
    clock.advance(20)
    queue.record_judgement(project, judge, served.item_id, label)


def figures(summary: spam.JudgeSummary) -> tuple[int, int]:
    return summary.compared, summary.differing


def test_answers_past_the_deciding_ones_do_not_turn_the_others_majority(
    pairs_project: Project, clock: Clock, admin_user: Any
) -> None:
    config = PairConfig.objects.get(project=pairs_project)  # judges_per_item 4, at most 6
    config.min_judgements = 1
    config.save()
    pairs_project.pair_config = config  # the project object the services get carries its settings
    (item,) = make_pair_items(pairs_project, 1)
    early = make_judges(pairs_project, 2, prefix="early")
    ana, ben, cas, dot = make_judges(pairs_project, 4)
    for judge in early:  # the two earliest answers, H and H, then both judges are blocked
        answer(pairs_project, judge, item, "H", clock)
    for judge in early:
        flags.block_judge(pairs_project, judge, admin_user, "")
    for judge, label in zip((ana, ben, cas, dot), "HNNN", strict=True):
        answer(pairs_project, judge, item, label, clock)
    item.refresh_from_db()
    assert (item.state, item.label) == ("consensus", "N")  # H N N N

    for judge in early:
        flags.unblock_judge(pairs_project, judge, admin_user)
    item.refresh_from_db()
    # Six counted answers, in answer order H H H N | N N: the first four decide, H 3 to 1.
    assert (item.state, item.label, item.judges_needed) == ("consensus", "H", 4)
    assert (item.votes_h, item.votes_n) == (3, 3)

    summaries = flags.judge_summaries(pairs_project)
    # Worked by hand, each against the others among H(early-00) H(early-01) H(ana) N(ben):
    # early-00, early-01 and ana (H) see H H N from the others: agree. ben (N) sees H H H: differs.
    # cas and dot (N, past the deciding four) see all four, H 3 to 1: differ.
    # Against every counted answer, the first three would have seen H H N N N (a majority for N): all differing.
    expected = {"early-00": (1, 0), "early-01": (1, 0), "judge-00": (1, 0), "judge-01": (1, 1),
                "judge-02": (1, 1), "judge-03": (1, 1)}
    by_name = {judge.username: judge for judge in [*early, ana, ben, cas, dot]}
    assert {name: figures(summaries[judge.pk]) for name, judge in by_name.items()} == expected
    # The one-judge statement (run after each answer) reads the same figures.
    for name, judge in by_name.items():
        assert figures(flags.judge_summaries(pairs_project, judge)[judge.pk]) == expected[name]

    flags.refresh_flags(pairs_project)
    disagreeing = set(
        JudgeFlag.objects.filter(project=pairs_project, rule="disagrees", status="open")
        .values_list("judge__username", flat=True)
    )
    assert disagreeing == {"judge-01", "judge-02", "judge-03"}  # ana, who voted with the consensus, is not flagged
    flag = JudgeFlag.objects.get(judge=ben, rule="disagrees")
    assert (flag.figures["compared"], flag.figures["differing"], flag.figures["share"]) == (1, 1, 1.0)


def python_summaries(project: Project, *, every_answer: bool = False) -> dict[int, spam.JudgeSummary]:
    """The figures computed in Python from each item's answers, independently of the database's statement;
    ``every_answer``: the rule as it was, against every counted answer of the others."""
    rows: dict[int, list[tuple[int, str, float | None]]] = {}
    needed: dict[int, int] = {}
    for item_id, judge_id, label, seconds, judges_needed in (
        PairJudgement.objects.filter(item__project=project, counted=True, answered_at__isnull=False)
        .order_by("item_id", "answered_at", "id")
        .values_list("item_id", "judge_id", "label", "seconds", "item__judges_needed")
    ):
        rows.setdefault(item_id, []).append((judge_id, label, seconds))
        needed[item_id] = judges_needed
    answers: dict[int, list[JudgeAnswer]] = {}
    for item_id, answered in rows.items():
        count = len(answered) if every_answer else len(deciding_answers([label for _, label, _ in answered],
                                                                          needed[item_id]))
        for position, (judge_id, label, seconds) in enumerate(answered):
            others = [other for index, (_, other, _) in enumerate(answered[:count]) if index != position]
            answers.setdefault(judge_id, []).append(
                JudgeAnswer(label, seconds, others.count("H"), others.count("N"))
            )
    return {judge_id: spam.summarize(judged) for judge_id, judged in answers.items()}


def test_the_database_figures_match_the_deciding_answers_on_a_mixed_history(
    pairs_project: Project, clock: Clock, admin_user: Any
) -> None:
    """Blocks and unblocks at random among eight judges on six items; the statement against Python, judge by judge."""
    rng = random.Random(11)
    make_pair_items(pairs_project, 6)
    judges = make_judges(pairs_project, 8)
    for step in range(60):
        judge = rng.choice(judges)
        if rng.random() < 0.15:
            if flags.BlockedJudge.objects.filter(project=pairs_project, judge=judge).exists():
                flags.unblock_judge(pairs_project, judge, admin_user)
            else:
                flags.block_judge(pairs_project, judge, admin_user, "")
            continue
        if flags.BlockedJudge.objects.filter(project=pairs_project, judge=judge).exists():
            continue
        served = queue.serve_next_item(pairs_project, judge)
        if served is None:
            continue
        clock.advance(5 + step % 7)
        queue.record_judgement(pairs_project, judge, served.item_id, rng.choice("HHNN?"))
    for judge in judges:  # every answer counts again, past the deciding ones where others took their places
        if flags.BlockedJudge.objects.filter(project=pairs_project, judge=judge).exists():
            flags.unblock_judge(pairs_project, judge, admin_user)

    expected = python_summaries(pairs_project)
    got = flags.judge_summaries(pairs_project)
    assert set(got) == set(expected)
    for judge in judges:
        summary = expected[judge.pk]
        for read in (got[judge.pk], flags.judge_summaries(pairs_project, judge)[judge.pk]):
            assert (read.judgements, read.timed, read.compared, read.differing) == (
                summary.judgements, summary.timed, summary.compared, summary.differing
            )
            assert {label: n for label, n in read.label_counts.items() if n} == summary.label_counts
            assert read.seconds_total == pytest.approx(summary.seconds_total)
    # The history holds items with answers past their deciding ones, and they move someone's figures.
    extra = [item for item in PairItem.objects.filter(project=pairs_project) if item.answered > item.judges_needed]
    assert extra
    before = python_summaries(pairs_project, every_answer=True)
    assert any(figures(before[pk]) != figures(summary) for pk, summary in expected.items())
