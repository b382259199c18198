"""A blocked judge's project page says they are blocked, why, and how many answers they gave; no items left."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import BlockedJudge, Membership, Project
from annotate.services.pairs import flags
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import PAGE, answer, text_of

pytestmark = pytest.mark.django_db

LABEL_PAGE = "/projects/pairs/pairs/label/"


def test_a_blocked_judge_sees_the_block_its_reason_and_all_their_answers(pairs_project: Project, admin_user: Any,
                                                                         alice: Any) -> None:
    items = make_pair_items(pairs_project, 6)
    for item in items[:3]:
        answer(item, alice, "H")
    flags.block_judge(pairs_project, alice, admin_user, "2 s an item, always H")
    html = login(alice).get(PAGE).content.decode()
    block = text_of(html, r'(<section class="card" data-role="blocked">.*?</section>)')
    assert "An admin blocked you" in block
    # The reason is an admin's words, isolated (bdi) in the line so a right-to-left one keeps its quote marks.
    assert text_of(block, r'data-role="block-reason"><bdi>(.*?)<') == "2 s an item, always H"
    # Her three answers, though none counts any more (progress would say 0).
    assert text_of(block, r'data-role="answers-given">(\d+)<') == "3"
    # No promise of work the queue refuses her, and no link to a page that refuses her.
    assert 'data-role="my-progress"' not in html and "left for you" not in html
    assert LABEL_PAGE not in html


def test_a_block_without_a_stored_reason_says_none_was_recorded(pairs_project: Project, admin_user: Any,
                                                                alice: Any) -> None:
    answer(make_pair_items(pairs_project, 1)[0], alice, "N")
    BlockedJudge.objects.create(project=pairs_project, judge=alice, blocked_by=admin_user)
    html = login(alice).get(PAGE).content.decode()
    block = text_of(html, r'(<section class="card" data-role="blocked">.*?</section>)')
    assert "no reason was recorded" in block and 'data-role="block-reason"' not in block
    assert text_of(block, r'data-role="answers-given">(\d+)<') == "1"


def test_an_unblocked_judge_still_sees_progress_and_the_labeling_link(pairs_project: Project, admin_user: Any,
                                                                    alice: Any, bob: Any) -> None:
    make_pair_items(pairs_project, 2)
    flags.block_judge(pairs_project, bob, admin_user, "spam")  # another judge's block is not hers
    html = login(alice).get(PAGE).content.decode()
    assert 'data-role="blocked"' not in html
    assert text_of(html, r'data-role="left">(\d+)<') == "2"
    assert LABEL_PAGE in html


def test_reviewers_who_do_not_judge_get_no_labeling_link(pairs_project: Project, admin_user: Any, charlie: Any
                                                         ) -> None:
    Membership.objects.create(project=pairs_project, user=charlie, role=Membership.Role.AUDITOR)
    assert LABEL_PAGE not in login(charlie).get(PAGE).content.decode()
    assert LABEL_PAGE in login(admin_user).get(PAGE).content.decode()
