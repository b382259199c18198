"""The spammer flags page of a pairs project: listing, block, dismiss, unblock."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import BlockedJudge, JudgeFlag, PairItem, PairJudgement, Project
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import FLAGS, HTMX, answer, text_of

pytestmark = pytest.mark.django_db


# --- spammer flags ----------------------------------------------------------------------------------------------


def test_flags_page_names_the_rule_and_figures(flagged: JudgeFlag, admin_user: Any) -> None:
    html = login(admin_user).get(FLAGS).content.decode()
    row = text_of(html, rf'(<tr data-flag="{flagged.pk}" data-judge="bob" data-rule="too_fast">.*?</tr>)')
    assert ("Mean time per item under the limit: mean time per item 3.2 s over 12 timed judgements, under the "
            "limit of 10.0 s.") in row
    assert 'data-role="block"' in row and 'data-role="dismiss"' in row


def test_blocking_needs_a_reason_and_then_takes_the_judge_out(flagged: JudgeFlag, pairs_project: Project,
                                                              admin_user: Any, alice: Any, bob: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    answer(item, bob, "H")
    url = f"/projects/pairs/pairs/flags/{flagged.pk}/block/"
    refused = login(admin_user).post(url, {"reason": "  "}, **HTMX).content.decode()
    assert "reason: say why you block this judge" in refused and "<html" not in refused
    assert not BlockedJudge.objects.exists()
    assert login(alice).post(url, {"reason": "x"}).status_code == 403
    assert login(admin_user).get(url).status_code == 405

    fragment = login(admin_user).post(url, {"reason": "3 s an item"}, **HTMX).content.decode()
    assert 'id="flag-lists"' in fragment and "<html" not in fragment
    assert text_of(fragment, r'<table class="grid" data-role="blocked-judges">.*?<tr data-judge="bob">(.*?)</tr>') \
        .startswith("<td>bob</td><td>3 s an item</td>")
    assert BlockedJudge.objects.get(judge=bob).reason == "3 s an item"
    assert not PairJudgement.objects.filter(judge=bob, counted=True).exists()
    assert JudgeFlag.objects.get(pk=flagged.pk).status == JudgeFlag.Status.BLOCKED


def test_dismissing_a_flag_keeps_the_judge(flagged: JudgeFlag, admin_user: Any, bob: Any, charlie: Any) -> None:
    url = f"/projects/pairs/pairs/flags/{flagged.pk}/dismiss/"
    assert login(charlie).post(url).status_code == 404
    response = login(admin_user).post(url, follow=True)
    assert "Flag on bob dismissed." in response.content.decode()
    flagged.refresh_from_db()
    assert flagged.status == JudgeFlag.Status.DISMISSED and flagged.reviewed_by is not None
    assert not BlockedJudge.objects.exists()
    html = login(admin_user).get(FLAGS).content.decode()
    assert "No open flags." in html and "Dismissed" in text_of(html, r'data-role="reviewed-flags">(.*?)</table>')


def test_flags_page_is_for_admins(pairs_project: Project, alice: Any, charlie: Any, admin_user: Any) -> None:
    assert login(alice).get(FLAGS).status_code == 403
    assert login(charlie).get(FLAGS).status_code == 404
    assert login(admin_user).post(FLAGS).status_code == 405
    fragment = login(admin_user).get(FLAGS, **HTMX).content.decode()
    assert 'id="flag-lists"' in fragment and "<html" not in fragment


def test_unblocking_makes_the_judges_answers_count_again(flagged: JudgeFlag, pairs_project: Project,
                                                         admin_user: Any, alice: Any, bob: Any, charlie: Any) -> None:
    block_url = f"/projects/pairs/pairs/flags/{flagged.pk}/block/"
    assert login(admin_user).post(block_url, {"reason": "3 s an item"}).status_code == 302
    assert PairItem.objects.filter(project=pairs_project, votes_h=0, votes_n=0).count() == 12
    url = f"/projects/pairs/pairs/flags/judges/{bob.pk}/unblock/"
    assert login(charlie).post(url).status_code == 404
    assert login(alice).post(url).status_code == 403
    assert login(admin_user).get(url).status_code == 405
    assert BlockedJudge.objects.filter(judge=bob).exists()

    response = login(admin_user).post(url, follow=True)
    assert "bob is no longer blocked" in response.content.decode()
    assert not BlockedJudge.objects.exists()
    assert PairJudgement.objects.filter(judge=bob, counted=True).count() == 12
    # Each item has bob's one answer back: H on the even ones, N on the odd ones.
    items = list(PairItem.objects.filter(project=pairs_project).order_by("id"))
    assert [(item.votes_h, item.votes_n) for item in items] == [(1, 0), (0, 1)] * 6
    assert JudgeFlag.objects.get(pk=flagged.pk).status == JudgeFlag.Status.DISMISSED
    assert login(admin_user).post(url).status_code == 404  # not blocked any more
