"""The home page of a pairs judge: their pairs projects with progress and a Label pairs link, no batch section unless
they annotate spans too, and no labeling link once an admin blocked them (the project page says why)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Membership, Project
from annotate.services.pairs import flags
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import answer, text_of

pytestmark = pytest.mark.django_db

LABEL_PAGE = "/projects/pairs/pairs/label/"


def home(user: Any) -> str:
    return login(user).get(reverse("home")).content.decode()


def headings(html: str) -> list[str]:
    return [re.sub(r"<[^>]+>|\s+", " ", found).strip() for found in re.findall(r"<h1[^>]*>(.*?)</h1>", html, re.S)]


def test_a_judge_of_pairs_projects_only_sees_their_pairs_with_progress_and_no_batch_section(
    pairs_project: Project, alice: Any
) -> None:
    items = make_pair_items(pairs_project, 3)
    answer(items[0], alice, "H")
    html = home(alice)
    assert "Your batches" not in html and "No batch is assigned" not in html
    assert headings(html) == ["Pairs to label"]
    row = text_of(html, r'(<tr data-project="pairs">.*?</tr>)')
    assert text_of(row, r'data-role="answered">(\d+)<') == "1"
    assert text_of(row, r'data-role="left">(\d+)<') == "2"
    assert f'data-role="next-pair" href="{LABEL_PAGE}"' in row


def test_a_member_of_a_span_project_still_sees_the_batch_section(
    pairs_project: Project, project: Project, alice: Any
) -> None:
    html = home(alice)  # alice annotates in `project`, which has no batch for her yet
    assert headings(html) == ["Your batches"]
    assert "No batch is assigned to you yet." in html
    assert "<h2>Pairs to label</h2>" in html and 'data-role="next-pair"' in html


def test_a_blocked_judge_gets_no_labeling_link_on_the_home_page_but_the_way_to_why(
    pairs_project: Project, admin_user: Any, alice: Any, bob: Any
) -> None:
    items = make_pair_items(pairs_project, 3)
    answer(items[0], alice, "H")
    flags.block_judge(pairs_project, alice, admin_user, "always H")
    html = home(alice)
    row = text_of(html, r'(<tr data-project="pairs">.*?</tr>)')
    assert 'data-role="blocked"' in row
    assert LABEL_PAGE not in html and 'data-role="next-pair"' not in html
    assert 'href="/projects/pairs/" data-role="blocked-why"' in row
    # That page says why and whom to ask.
    project_page = login(alice).get("/projects/pairs/").content.decode()
    assert "always H" in project_page and "Ask the project's admins" in project_page
    # Another judge of the project keeps the link.
    assert f'data-role="next-pair" href="{LABEL_PAGE}"' in home(bob)


def test_an_auditor_of_a_pairs_project_only_keeps_the_batch_section_and_no_pairs_list(
    pairs_project: Project, charlie: Any
) -> None:
    Membership.objects.create(project=pairs_project, user=charlie, role=Membership.Role.AUDITOR)
    html = home(charlie)
    assert 'data-role="pairs-to-label"' not in html
    assert headings(html) == ["Your batches"]


# README's demo accounts: the page's one heading, the batch row (or the "no batch" line, None without a batch section),
# and the demo pairs project's "answered, left" (None: no pairs line).
DEMO_HOMES = {
    "admin": ("Your batches", "no batch", "0 answered, 5 left"),
    "alice": ("Your batches", "demo-batch-1", "0 answered, 5 left"),
    "bob": ("Your batches", "demo-batch-1", "0 answered, 5 left"),
    "carol": ("Your batches", "demo-batch-2", "26 answered, 4 left"),
    "dave": ("Your batches", "demo-batch-2", "26 answered, 4 left"),
    "erin": ("Pairs to label", None, "26 answered, 4 left"),
    "frank": ("Pairs to label", None, "26 answered, 4 left"),
    "grace": ("Your batches", "no batch", None),
}


def home_summary(html: str) -> tuple[str, str | None, str | None]:
    (heading,) = headings(html)
    batches = None
    if 'data-role="batches"' in html:
        batch = re.search(r"<td>(demo-batch-\d)</td>", html)
        batches = batch.group(1) if batch else "no batch" if "No batch is assigned to you yet." in html else "?"
    pairs = None
    row = re.search(r'<tr data-project="demo-pairs">(.*?)</tr>', html, re.S)
    if row:
        assert 'data-role="next-pair"' in row.group(1)
        answered = text_of(row.group(1), r'data-role="answered">(\d+)<')
        left = text_of(row.group(1), r'data-role="left">(\d+)<')
        pairs = f"{answered} answered, {left} left"
    return heading, batches, pairs


def test_each_demo_account_gets_the_home_page_its_role_calls_for(db: None) -> None:
    from django.contrib.auth import get_user_model

    from annotate.services.demo import load_demo_data

    load_demo_data()  # its jobs wait for a commit that never comes here: the home page needs none of them
    users = get_user_model().objects
    found = {username: home_summary(home(users.get(username=username))) for username in DEMO_HOMES}
    assert found == DEMO_HOMES
