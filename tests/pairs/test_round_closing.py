"""Creating the next round closes the open one: the wizard and `pairs_round` say which items that leaves unfinished."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import PairItem, PairRound, Project
from annotate.services.pairs import rounds
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_rounds import add_items
from tests.pairs.page_helpers import WIZARD, answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def half_judged_round(pairs_project: Project, alice: Any, bob: Any) -> Project:
    """Round 1 open with 4 items: one decided, one with 2 of its 4 answers, two with none (10 answers missing)."""
    decided, halfway, *untouched = make_pair_items(pairs_project, 4, round_number=1)
    PairItem.objects.filter(pk=decided.pk).update(state=PairItem.State.CONSENSUS, label="H", votes_h=4, taken=4)
    answer(halfway, alice, "H")
    answer(halfway, bob, "N")
    PairItem.objects.filter(pk=halfway.pk).update(votes_h=1, votes_n=1, taken=2)
    make_pair_items(pairs_project, 5, round_number=None)  # the pool round 2 would draw from
    return pairs_project


def test_the_open_rounds_unfinished_items_are_counted(half_judged_round: Project) -> None:
    unfinished = rounds.unfinished_open_round(half_judged_round)
    assert unfinished is not None
    assert (unfinished["round"], unfinished["items"], unfinished["answers_missing"]) == (1, 3, 10)
    assert unfinished["message"].startswith("Round 1 is still open: 3 of its items are being judged (10 answers")
    assert "Creating round 2 closes round 1" in unfinished["message"]


def test_nothing_is_said_when_the_open_round_is_finished_or_there_is_none(pairs_project: Project) -> None:
    assert rounds.unfinished_open_round(pairs_project) is None
    items = make_pair_items(pairs_project, 2, round_number=1)
    PairItem.objects.filter(pk__in=[item.pk for item in items]).update(state=PairItem.State.CONSENSUS, label="N")
    assert rounds.unfinished_open_round(pairs_project) is None
    PairRound.objects.filter(project=pairs_project).update(status=PairRound.Status.CLOSED)
    make_pair_items(pairs_project, 1, round_number=None)
    assert rounds.unfinished_open_round(pairs_project) is None


def test_the_wizard_warns_before_closing_a_round_with_items_being_judged(half_judged_round: Project,
                                                                        admin_user: Any) -> None:
    html = login(admin_user).get(WIZARD).content.decode()
    assert 'data-role="unfinished-round"' in html
    assert "Round 1 is still open: 3 of its items are being judged (10 answers missing)" in html


def test_pairs_round_notes_the_items_it_leaves_unfinished(detector_project: Project) -> None:
    first = PairRound.objects.get(project=detector_project, number=1)
    PairRound.objects.filter(pk=first.pk).update(status=PairRound.Status.OPEN)
    waiting = add_items(detector_project, [0.0, 0.0], state=PairItem.State.OPEN, pair_round=first)
    PairItem.objects.filter(pk__in=[item.pk for item in waiting]).update(judges_needed=4, votes_n=1, taken=1)

    def run(*extra: str) -> str:
        out = StringIO()
        call_command("pairs_round", "--project", "pairs", "--size", "3", "--low", "0", "--high", "1", "--seed", "2",
                     *extra, stdout=out, stderr=StringIO())
        return out.getvalue()

    assert "Note: Round 1 is still open: 2 of its items are being judged (6 answers missing)" in run("--preview")
    created = run()
    assert "Created round 2 with 3 items" in created
    assert "Closed round 1: its 2 items still being judged (6 answers missing) are no longer served" in created
    assert PairRound.objects.get(pk=first.pk).status == PairRound.Status.CLOSED
