"""Spammer flags: the three rules on built cases, the min_judgements threshold, the figures; review and blocking."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import BlockedJudge, JudgeFlag, PairConfig, PairItem, PairJudgement, Project
from annotate.pairmath import spam
from annotate.pairmath.spam import JudgeAnswer, SpamLimits
from annotate.services.pairs import flags, queue
from tests.pairs.conftest import Clock, make_judges, make_pair_items

LIMITS = SpamLimits(min_judgements=10, min_mean_seconds=10.0, max_disagreement=0.30)


def answers(labels: str, seconds: float = 20.0, others: tuple[int, int] = (0, 0)) -> list[JudgeAnswer]:
    return [JudgeAnswer(label, seconds, *others) for label in labels]


def rules(found: list[spam.SpamFlag]) -> dict[str, dict[str, Any]]:
    return {flag.rule: flag.figures for flag in found}


# --------------------------------------------------------------------------- the pure rules


def test_no_rule_applies_before_min_judgements_answers() -> None:
    nine_fast_h = answers("H" * 9, seconds=1.0, others=(0, 3))
    assert spam.spam_flags(nine_fast_h, LIMITS) == []
    ten = answers("H" * 10, seconds=1.0, others=(0, 3))
    assert set(rules(spam.spam_flags(ten, LIMITS))) == {"same_label", "too_fast", "disagrees"}


def test_same_label_on_every_judgement_names_the_label_and_the_count() -> None:
    assert rules(spam.spam_flags(answers("N" * 12), LIMITS)) == {"same_label": {"judgements": 12, "label": "N"}}
    assert rules(spam.spam_flags(answers("?" * 10), LIMITS)) == {"same_label": {"judgements": 10, "label": "?"}}
    assert spam.spam_flags(answers("N" * 11 + "H"), LIMITS) == []


def test_too_fast_is_a_mean_under_the_limit_of_the_timed_answers() -> None:
    # 10 answers: eight at 9 s, two at 12 s -> mean (72 + 24) / 10 = 9.6 s.
    mixed = [*answers("HN" * 4, seconds=9.0), *answers("HN", seconds=12.0)]
    assert rules(spam.spam_flags(mixed, LIMITS)) == {
        "too_fast": {"judgements": 10, "timed": 10, "mean_seconds": 9.6, "limit_seconds": 10.0}
    }
    at_the_limit = answers("HN" * 5, seconds=10.0)
    assert spam.spam_flags(at_the_limit, LIMITS) == []
    # Untimed answers (None) are left out of the mean, not counted as zero.
    untimed = [*answers("HN" * 2, seconds=5.0), *[JudgeAnswer(label, None) for label in "HNHNHN"]]
    assert rules(spam.spam_flags(untimed, LIMITS))["too_fast"] == {
        "judgements": 10, "timed": 4, "mean_seconds": 5.0, "limit_seconds": 10.0
    }


def test_a_mean_just_under_the_limit_is_never_shown_as_the_limit() -> None:
    # Ten answers of 9.9996 s: the rule trips (9.9996 < 10), and plain rounding to 3 decimals would show 10.0 s,
    # "under the limit of 10.0 s". The figure is rounded down instead: 9.999 s.
    found = rules(spam.spam_flags(answers("HN" * 5, seconds=9.9996), LIMITS))
    assert found["too_fast"]["mean_seconds"] == 9.999 and found["too_fast"]["mean_seconds"] < 10.0
    sentence = spam.explain("too_fast", found["too_fast"])
    assert sentence == "mean time per item 9.999 s over 10 timed judgements, under the limit of 10.0 s"
    # Away from the limit the figure is rounded as before.
    assert rules(spam.spam_flags(answers("HN" * 5, seconds=9.12345), LIMITS))["too_fast"]["mean_seconds"] == 9.123
    # A flag stored with the old rounding still says the exact mean was under the limit.
    old = spam.explain("too_fast", {"judgements": 10, "timed": 10, "mean_seconds": 10.0, "limit_seconds": 10.0})
    assert "10.0 s (rounded; the exact mean is under the limit)" in old


def test_a_share_just_over_the_limit_is_never_shown_as_the_limit() -> None:
    # 3001 of 10003 votes differ: 0.300010 > 0.30, which 4 decimals would show as 0.3 (30.00%); shown 0.3001.
    figures = spam.disagreement_figures(spam.JudgeSummary(10003, {"H": 10003}, 0, 0.0, 10003, 3001), LIMITS)
    assert figures["share"] == 0.3001
    assert "(30.01%)" in spam.explain("disagrees", figures)


@pytest.mark.parametrize(
    ("value", "limit", "digits", "tripped_when", "shown"),
    [
        (9.9996, 10.0, 3, "under", 9.999),  # under: rounded down, not onto the limit
        (10.0, 10.0, 3, "under", 10.0),  # on the limit: not under, shown as it is
        (10.00004, 10.0001, 3, "under", 10.0),  # under a limit of more decimals: 10.0 is under it too
        (10.0001, 10.0001, 3, "under", 10.001),  # on it: not under, so not shown below it
        (0.30004, 0.3, 4, "over", 0.3001),  # over: rounded up, not onto the limit
        (0.29996, 0.3, 4, "over", 0.3),  # not over: 0.3 is not over either
        (5.12345, 10.0, 3, "under", 5.123),  # far from the limit: plain rounding
    ],
)
def test_rounded_beside_keeps_the_rules_answer(value: float, limit: float, digits: int, tripped_when: Any,
                                               shown: float) -> None:
    rounded = spam.rounded_beside(value, limit, digits, tripped_when=tripped_when)
    assert rounded == shown
    if tripped_when == "under":
        assert (rounded < limit) == (value < limit)
    else:
        assert (rounded > limit) == (value > limit)


def test_disagreement_counts_only_items_where_the_others_have_a_strict_majority() -> None:
    built = [
        # Four items where the others say N 3-0 and the judge says H: differing.
        *answers("HHHH", others=(0, 3)),
        # Six items where the others say H 2-1 and the judge agrees.
        *answers("HHHHHH", others=(2, 1)),
        # Others split 1-1 or have no votes: left out.
        *answers("NNN", others=(1, 1)),
        *answers("N", others=(0, 0)),
    ]
    found = rules(spam.spam_flags(built, LIMITS))
    assert found == {
        "disagrees": {"judgements": 14, "compared": 10, "differing": 4, "share": 0.4, "limit_share": 0.3}
    }


def test_disagreement_at_exactly_the_limit_is_not_flagged_and_unsure_answers_neither_agree_nor_differ() -> None:
    three_of_ten = [*answers("HHH", others=(0, 2)), *answers("NNNNNNN", others=(0, 2))]
    assert spam.spam_flags(three_of_ten, LIMITS) == []
    with_unsure = [*answers("HHH", others=(0, 2)), *answers("NNNNNN", others=(0, 2)), *answers("??", others=(0, 3))]
    figures = rules(spam.spam_flags(with_unsure, LIMITS))["disagrees"]
    assert (figures["compared"], figures["differing"], figures["share"]) == (9, 3, 0.3333)


def test_limits_come_from_the_project_settings() -> None:
    strict = SpamLimits(min_judgements=3, min_mean_seconds=30.0, max_disagreement=0.1)
    found = rules(spam.spam_flags([*answers("HN", seconds=20.0, others=(0, 1)), JudgeAnswer("N", 20.0, 0, 1)],
                                  strict))
    assert found["too_fast"]["mean_seconds"] == 20.0 and found["too_fast"]["limit_seconds"] == 30.0
    assert found["disagrees"]["share"] == pytest.approx(0.3333)


def test_each_flag_explains_itself_with_its_figures() -> None:
    found = spam.spam_flags(answers("H" * 10, seconds=2.5, others=(0, 3)), LIMITS)
    assert [flag.explanation for flag in found] == [
        "answered H on every one of 10 judgements",
        "mean time per item 2.5 s over 10 timed judgements, under the limit of 10.0 s",
        "10 of 10 votes (100.00%) differ from the other judges' majority on items where they have one; the limit is 30%",
    ]


@pytest.mark.parametrize(
    ("rule", "before", "now", "worse"),
    [
        ("same_label", {"judgements": 10, "label": "H"}, {"judgements": 19, "label": "H"}, False),
        ("same_label", {"judgements": 10, "label": "H"}, {"judgements": 20, "label": "H"}, True),
        ("too_fast", {"judgements": 10, "mean_seconds": 8.0}, {"judgements": 20, "mean_seconds": 7.9}, True),
        ("too_fast", {"judgements": 10, "mean_seconds": 8.0}, {"judgements": 20, "mean_seconds": 8.0}, False),
        ("too_fast", {"judgements": 10, "mean_seconds": 8.0}, {"judgements": 12, "mean_seconds": 1.0}, False),
        ("disagrees", {"judgements": 10, "share": 0.4}, {"judgements": 25, "share": 0.5}, True),
        ("disagrees", {"judgements": 10, "share": 0.4}, {"judgements": 25, "share": 0.35}, False),
    ],
)
def test_a_flag_got_worse_only_over_min_judgements_more_answers(rule: str, before: dict[str, Any],
                                                                 now: dict[str, Any], worse: bool) -> None:
    assert spam.got_worse(rule, before, now, min_judgements=10) is worse


# --------------------------------------------------------------------------- flags as answers arrive


def run_judge(project: Project, judge: Any, labels: str, clock: Clock, seconds: float) -> None:
    for label in labels:
        served = queue.serve_next_item(project, judge)
        assert served is not None
        clock.advance(seconds)
        queue.record_judgement(project, judge, served.item_id, label)


@pytest.mark.django_db
def test_a_fast_judge_is_flagged_at_the_tenth_answer_and_the_figures_follow(pairs_project: Project,
                                                                            clock: Clock) -> None:
    make_pair_items(pairs_project, 20)
    judge = make_judges(pairs_project, 1)[0]
    run_judge(pairs_project, judge, "HNHNHNHNH", clock, seconds=4)
    assert not JudgeFlag.objects.exists()
    run_judge(pairs_project, judge, "N", clock, seconds=4)
    flag = JudgeFlag.objects.get(judge=judge)
    assert flag.rule == "too_fast" and flag.status == "open"
    assert flag.figures == {"judgements": 10, "timed": 10, "mean_seconds": 4.0, "limit_seconds": 10.0}
    run_judge(pairs_project, judge, "H", clock, seconds=15)
    flag.refresh_from_db()
    assert flag.figures["judgements"] == 11 and flag.figures["mean_seconds"] == pytest.approx(5.0)


@pytest.mark.django_db
def test_an_open_flag_whose_rule_stops_holding_goes_away(pairs_project: Project, clock: Clock) -> None:
    make_pair_items(pairs_project, 20)
    judge = make_judges(pairs_project, 1)[0]
    run_judge(pairs_project, judge, "HNHNHNHNHN", clock, seconds=8)  # mean 8 s: flagged
    assert JudgeFlag.objects.filter(judge=judge, rule="too_fast").exists()
    run_judge(pairs_project, judge, "HN", clock, seconds=30)  # mean (80 + 60) / 12 = 11.7 s
    assert not JudgeFlag.objects.filter(judge=judge).exists()


@pytest.mark.django_db
def test_a_dismissed_flag_stays_dismissed_until_the_figures_get_worse_over_min_judgements_more(
    pairs_project: Project, clock: Clock, admin_user: Any
) -> None:
    make_pair_items(pairs_project, 40)
    judge = make_judges(pairs_project, 1)[0]
    run_judge(pairs_project, judge, "H" * 10, clock, seconds=20)
    flag = JudgeFlag.objects.get(judge=judge, rule="same_label")
    flags.dismiss_flag(flag, admin_user)
    run_judge(pairs_project, judge, "H" * 9, clock, seconds=20)
    flag.refresh_from_db()
    assert flag.status == "dismissed" and flag.figures == {"judgements": 10, "label": "H"}
    assert flag.reviewed_by == admin_user
    run_judge(pairs_project, judge, "H", clock, seconds=20)  # 20 answers, still all H: ten more than dismissed with
    flag.refresh_from_db()
    assert flag.status == "open" and flag.reviewed_by is None
    assert flag.figures["judgements"] == 20
    assert flag.figures["dismissed_before"]["figures"] == {"judgements": 10, "label": "H"}
    run_judge(pairs_project, judge, "H", clock, seconds=20)
    flag.refresh_from_db()
    assert flag.figures["judgements"] == 21 and "dismissed_before" in flag.figures


@pytest.mark.django_db
def test_a_judge_against_the_others_majority_is_flagged_with_the_disagreement_figures(
    pairs_project: Project, clock: Clock
) -> None:
    PairConfig.objects.filter(project=pairs_project).update(judges_per_item=4)
    items = make_pair_items(pairs_project, 10)
    honest = make_judges(pairs_project, 3, prefix="honest")
    contrarian = make_judges(pairs_project, 1, prefix="contrarian")[0]
    # The honest judges say N on every item; the contrarian says H on 4 and N on 6 (answering last).
    for judge in honest:
        run_judge(pairs_project, judge, "N" * 10, clock, seconds=20)
    run_judge(pairs_project, contrarian, "HHHHNNNNNN", clock, seconds=20)
    flag = JudgeFlag.objects.get(judge=contrarian)
    assert flag.rule == "disagrees"
    assert flag.figures == {"judgements": 10, "compared": 10, "differing": 4, "share": 0.4, "limit_share": 0.3}
    assert {item.state for item in PairItem.objects.filter(pk__in=[i.pk for i in items])} == {"consensus"}


# --------------------------------------------------------------------------- blocking


@pytest.mark.django_db
def test_blocking_a_judge_takes_their_votes_out_and_requeues_the_items_their_vote_decided(
    pairs_project: Project, clock: Clock, admin_user: Any
) -> None:
    items = make_pair_items(pairs_project, 3)
    honest = make_judges(pairs_project, 4, prefix="honest")
    spammer = make_judges(pairs_project, 1, prefix="spammer")[0]
    # Item 0: three honest N then the spammer's N (consensus made with the spammer's vote).
    for judge in honest[:3]:
        run_judge(pairs_project, judge, "N", clock, seconds=20)
    run_judge(pairs_project, spammer, "N", clock, seconds=1)
    assert PairItem.objects.get(pk=items[0].pk).state == "consensus"
    # Item 1: the spammer holds a serve, unanswered.
    held = queue.serve_next_item(pairs_project, spammer)
    assert held.item_id == items[1].pk
    blocked = flags.block_judge(pairs_project, spammer, admin_user, "answers in a second")
    assert isinstance(blocked, BlockedJudge) and blocked.reason == "answers in a second"
    assert blocked.items_recomputed == 2 and blocked.items_reopened == 1
    first = PairItem.objects.get(pk=items[0].pk)
    assert (first.state, first.label, first.votes_n, first.taken, first.judges_needed) == ("open", "", 3, 3, 4)
    assert PairItem.objects.get(pk=items[1].pk).taken == 0
    assert not PairJudgement.objects.filter(judge=spammer, answered_at__isnull=True).exists()
    assert list(PairJudgement.objects.filter(judge=spammer).values_list("counted", flat=True)) == [False]
    # The item goes back to the queue: the fourth honest judge gets it and decides it.
    run_judge(pairs_project, honest[3], "N", clock, seconds=20)
    first.refresh_from_db()
    assert (first.state, first.label, first.votes_n) == ("consensus", "N", 4)
    with pytest.raises(queue.JudgeBlocked):
        queue.serve_next_item(pairs_project, spammer)
    # Blocking twice changes nothing.
    again = flags.block_judge(pairs_project, spammer, admin_user, "")
    assert again.pk == blocked.pk and again.items_recomputed == 0


@pytest.mark.django_db
def test_blocking_marks_the_judges_flags_blocked_and_they_cannot_be_dismissed(
    pairs_project: Project, clock: Clock, admin_user: Any
) -> None:
    make_pair_items(pairs_project, 10)
    spammer = make_judges(pairs_project, 1, prefix="spammer")[0]
    run_judge(pairs_project, spammer, "H" * 10, clock, seconds=1)
    assert set(JudgeFlag.objects.filter(judge=spammer).values_list("rule", flat=True)) == {"same_label", "too_fast"}
    flags.block_judge(pairs_project, spammer, admin_user, "")
    assert set(JudgeFlag.objects.filter(judge=spammer).values_list("status", flat=True)) == {"blocked"}
    with pytest.raises(flags.FlagReviewError, match="blocked"):
        flags.dismiss_flag(JudgeFlag.objects.filter(judge=spammer).first(), admin_user)
    # Their flags stay as they were however the figures move (recomputing counted=False answers finds none).
    flags.check_judge(pairs_project, spammer)
    assert JudgeFlag.objects.filter(judge=spammer, status="blocked").count() == 2


@pytest.mark.django_db
def test_undo_under_the_threshold_clears_open_flags(pairs_project: Project, clock: Clock) -> None:
    make_pair_items(pairs_project, 10)
    judge = make_judges(pairs_project, 1)[0]
    run_judge(pairs_project, judge, "H" * 10, clock, seconds=20)
    assert JudgeFlag.objects.filter(judge=judge, rule="same_label").exists()
    queue.undo_last_judgement(pairs_project, judge)
    assert not JudgeFlag.objects.filter(judge=judge).exists()


@pytest.mark.django_db
def test_the_database_summary_counts_what_the_rules_would_count_from_each_answer(pairs_project: Project,
                                                                                clock: Clock) -> None:
    """The SQL that sums a judge's figures against the pure summary of their answers, read row by row."""
    make_pair_items(pairs_project, 12)
    judges = make_judges(pairs_project, 5)
    scripts = ["HHNH?NHHNNHH", "NNNHHH?HNHNN", "H?HNNHHNHHNH", "HHHHHHNNNNN?", "?NH"]
    for judge, labels in zip(judges, scripts, strict=True):
        run_judge(pairs_project, judge, labels, clock, seconds=7 + len(labels) % 5)
    summaries = flags.judge_summaries(pairs_project)
    for judge in judges:
        rows = PairJudgement.objects.filter(judge=judge, counted=True, answered_at__isnull=False).values_list(
            "label", "seconds", "item__votes_h", "item__votes_n"
        )
        answers_read = [JudgeAnswer(label, seconds, h - (label == "H"), n - (label == "N"))
                        for label, seconds, h, n in rows]
        expected = spam.summarize(answers_read)
        got = summaries[judge.pk]
        assert {k: v for k, v in got.label_counts.items() if v} == expected.label_counts
        assert (got.judgements, got.timed, got.compared, got.differing) == (
            expected.judgements, expected.timed, expected.compared, expected.differing
        )
        assert got.seconds_total == pytest.approx(expected.seconds_total)
    assert sum(summary.compared for summary in summaries.values()) > 0
    assert sum(summary.differing for summary in summaries.values()) > 0
