"""The members page of a pairs project speaks of judges and their answers, not of span batches."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Membership, Project
from annotate.services.pairs import flags
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import HTMX, answer, text_of

pytestmark = pytest.mark.django_db

MEMBERS = "/projects/pairs/members/"


def member_row(page: str, username: str) -> str:
    return text_of(page, rf'(<tr data-member="{username}">.*?</tr>)')


def test_pairs_members_page_describes_judging_and_counts_each_judges_answers(
        pairs_project: Project, admin_user: Any, alice: Any, bob: Any, charlie: Any) -> None:
    Membership.objects.create(project=pairs_project, user=charlie, role=Membership.Role.AUDITOR)
    items = make_pair_items(pairs_project, 3)
    for item in items:
        answer(item, alice, "H")
    answer(items[0], bob, "N")
    flags.block_judge(pairs_project, bob, admin_user, "spam")
    response = login(admin_user).get(MEMBERS)
    assert response.status_code == 200
    page = response.content.decode()
    assert "mark spans" not in page and "batches assigned" not in page and "<th>Batches</th>" not in page
    assert "annotators judge the items" in text_of(page, r'data-role="roles-help">(.*?)</p>')
    assert "<th>Answers given</th>" in page
    assert text_of(member_row(page, "alice"), r'data-role="answers">(\d+)') == "3"
    assert text_of(member_row(page, "adam"), r'data-role="answers">(\d+)') == "0"
    bob_row = member_row(page, "bob")
    assert text_of(bob_row, r'data-role="answers">(\d+)') == "1" and 'data-role="blocked"' in bob_row
    assert "does not judge" in member_row(page, "charlie")
    assert "unassign or reassign" not in page


def test_pairs_members_fragment_after_an_action_keeps_the_pairs_columns(pairs_project: Project, admin_user: Any,
                                                                        alice: Any) -> None:
    answer(make_pair_items(pairs_project, 1)[0], alice, "H")
    fragment = login(admin_user).post(MEMBERS, {"username": "alice", "role": "annotator"}, **HTMX).content.decode()
    assert "<html" not in fragment and "<th>Answers given</th>" in fragment
    assert text_of(member_row(fragment, "alice"), r'data-role="answers">(\d+)') == "1"


def test_span_members_page_keeps_its_batches_column(project: Project, admin_user: Any) -> None:
    page = login(admin_user).get("/projects/demo/members/").content.decode()
    assert "<th>Batches</th>" in page and "mark spans in the batches" in page and "Answers given" not in page
