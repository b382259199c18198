"""`pairs_round`: preview changes nothing, round 1 at random, round 2 with vectors computed first, refusals."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import PairConfig, PairDetector, PairItem, PairRound, Project
from tests.pairs.conftest import make_pair_items

pytestmark = pytest.mark.django_db


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("pairs_round", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_preview_prints_the_funnel_and_changes_nothing(pairs_project: Project) -> None:
    make_pair_items(pairs_project, 8, round_number=None)
    out, _ = run("--project", "pairs", "--preview", "--size", "3", "--seed", "4", "--json")
    shown = json.loads(out)
    assert shown["round"] == 1 and shown["preview"] is True and shown["created"] is False
    assert [(row["step"], row["count"]) for row in shown["funnel"]] == [("pool", 8), ("selected", 3)]
    assert shown["selected"] == 3 and shown["seed"] == 4 and shown["refusal"] is None
    assert not PairRound.objects.exists() and PairItem.objects.filter(state="pool").count() == 8

    text, _ = run("--project", "pairs", "--preview", "--size", "3", "--seed", "4")
    assert "round 1, seed 4 (preview: nothing changed)" in text and "Would draw 3 items." in text


def test_round_one_is_created_at_random_and_open_to_the_annotators(pairs_project: Project) -> None:
    make_pair_items(pairs_project, 8, round_number=None)
    text, _ = run("--project", "pairs", "--size", "5", "--seed", "9")
    assert "Created round 1 with 5 items" in text
    pair_round = PairRound.objects.get(project=pairs_project)
    assert (pair_round.number, pair_round.status, pair_round.seed) == (1, "open", 9)
    assert PairItem.objects.filter(round=pair_round, state="open", judges_needed=4).count() == 5


def test_round_two_computes_the_vectors_first_then_draws_through_the_detector(pairs_project: Project) -> None:
    PairConfig.objects.filter(project=pairs_project).update(min_counts=10)
    judged = make_pair_items(pairs_project, 12, round_number=1)
    for index, item in enumerate(judged):
        # The factory cycles name, date, verb and synonym swaps: call the first two H, the others N.
        PairItem.objects.filter(pk=item.pk).update(state="consensus", label="H" if index % 4 < 2 else "N")
    make_pair_items(pairs_project, 8, round_number=None)
    out, _ = run("--project", "pairs", "--size", "4", "--low", "0", "--high", "1", "--paraphrase-max", "1",
                 "--drop-fraction", "0", "--seed", "3", "--json")
    shown = json.loads(out)
    assert shown["vectors_computed"] == 20 and shown["created"] is True and shown["round"] == 2
    assert [row["count"] for row in shown["funnel"]] == [8, 8, 8, 8, shown["funnel"][4]["count"], 4]
    # Round 1's 12 consensus items, each counted once per repeated fold split.
    cross_validation = shown["ratio"]["cross_validation"]
    assert cross_validation["items"] == 12 and cross_validation["seed"] == 3
    total = shown["ratio"]["tp"] + shown["ratio"]["fp"] + shown["ratio"]["tn"] + shown["ratio"]["fn"]
    assert total == 12 * cross_validation["repeats"] == 12 * len(cross_validation["per_split"])
    assert "cross-validated" in shown["ratio"]["counts_from"]
    assert PairDetector.objects.get(project=pairs_project).number == 1
    drawn = PairItem.objects.filter(round__number=2)
    assert drawn.count() == 4 and all(item.selection["method"] == "detector" for item in drawn)
    assert PairRound.objects.get(number=1).status == "closed"
    assert not PairItem.objects.filter(project=pairs_project, vector__isnull=True).exists()


def test_too_few_labelled_items_is_an_error_naming_the_numbers(pairs_project: Project) -> None:
    make_pair_items(pairs_project, 2, round_number=1)
    PairItem.objects.filter(project=pairs_project).update(state="consensus", label="H")
    make_pair_items(pairs_project, 3, round_number=None)
    before = list(PairItem.objects.order_by("pk").values_list("state", "round_id"))
    with pytest.raises(CommandError, match=r"2 consensus or imported-label items \(2 H, 0 N\).*at least 20"):
        run("--project", "pairs", "--size", "2")
    assert PairRound.objects.count() == 1 and not PairDetector.objects.exists()
    assert list(PairItem.objects.order_by("pk").values_list("state", "round_id")) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--size", "0"], "--size must be a positive whole number, not '0'"),
        (["--low", "1.5"], "--low must be a number from 0 to 1, not '1.5'"),
        (["--seed", "x"], "--seed must be a whole number >= 0, not 'x'"),
    ],
)
def test_bad_options_are_named(pairs_project: Project, args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        run("--project", "pairs", *args)


def test_a_project_of_another_kind_is_refused(admin_user: Any) -> None:
    Project.objects.create(name="Spans", slug="spans")
    with pytest.raises(CommandError, match="not a pairs project"):
        run("--project", "spans")
