"""The pair labeling page's states the server decides: a blocked judge is told so (no "items left"), an empty
project says there is nothing to label yet, and a closed round's refusal does not ask for what the page does."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client

from annotate.models import BlockedJudge, PairRound, Project
from annotate.services.pairs import queue
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import text_of

pytestmark = pytest.mark.django_db

LABEL_PAGE = "/projects/pairs/pairs/label/"


def page_data(html: str) -> dict[str, Any]:
    """The JSON the page's script starts from."""
    return json.loads(text_of(html, r'<script id="pair-page" type="application/json">(.*?)</script>'))


def named(project: Project) -> Project:
    """A name unlike the slug, so a message that names the project shows which of the two it used."""
    project.name = "Bridge news"
    project.save(update_fields=["name"])
    return project


def test_a_blocked_judges_label_page_says_so_and_shows_no_items_left(pairs_project: Project, admin_user: Any,
                                                                     alice: Any) -> None:
    make_pair_items(named(pairs_project), 7)
    BlockedJudge.objects.create(project=pairs_project, judge=alice, blocked_by=admin_user)
    html = login(alice).get(LABEL_PAGE).content.decode()
    assert 'data-state="blocked"' in html
    end = text_of(html, r'(<section class="pair-end[^>]*>.*?</section>)')
    assert " hidden" not in end.split(">", 1)[0]
    assert text_of(end, r'data-role="end-title">(.*?)<') == "You are blocked in this project"
    assert text_of(end, r'data-role="end-reason">(.*?)<').startswith(
        "You are blocked from judging in the project &quot;Bridge news&quot;")
    progress = text_of(html, r'(<span class="pair-progress"[^>]*>)')
    assert progress.endswith(" hidden>")
    assert re.search(r'<section class="pair-item[^>]* hidden>', html)
    data = page_data(html)
    assert data["progress"] is None and data["blocked"].startswith("You are blocked")


def test_the_api_refuses_a_blocked_judge_naming_the_project_by_name_with_the_code_blocked(
    pairs_project: Project, admin_user: Any, alice: Any
) -> None:
    (item,) = make_pair_items(named(pairs_project), 1)
    client = Client()
    client.force_login(alice)
    assert client.get("/api/pairs/next/?project=pairs").json()["id"] == item.pk
    BlockedJudge.objects.create(project=pairs_project, judge=alice, blocked_by=admin_user)
    for response in (
        client.post(f"/api/pairs/{item.pk}/judgements/", {"label": "H"}, content_type="application/json"),
        client.get("/api/pairs/next/?project=pairs"),
    ):
        assert response.status_code == 403
        body = response.json()
        assert body["code"] == "blocked"
        assert body["detail"].startswith('You are blocked from judging in the project "Bridge news"')
        assert "'pairs'" not in body["detail"]


def test_an_unblocked_judges_label_page_has_its_progress_and_no_block(pairs_project: Project, alice: Any) -> None:
    make_pair_items(pairs_project, 2)
    html = login(alice).get(LABEL_PAGE).content.decode()
    assert 'data-state="loading"' in html and "You are blocked" not in html
    assert not text_of(html, r'(<span class="pair-progress"[^>]*>)').endswith(" hidden>")
    assert page_data(html)["progress"] == {"answered": 0, "left": 2}


def test_an_empty_project_says_there_is_nothing_to_label_yet_and_admins_where_to_import(
    pairs_project: Project, admin_user: Any, alice: Any
) -> None:
    for user, sees_import in ((admin_user, True), (alice, False)):
        html = login(user).get(LABEL_PAGE).content.decode()
        default = text_of(html, r'<template data-role="end-default">(.*?)</template>')
        assert text_of(default, r'data-role="end-title">(.*?)<') == "Nothing to label yet"
        assert "You have answered every item" not in html
        assert ('href="/projects/pairs/#import"' in default) is sees_import


def test_a_project_with_items_keeps_the_answered_everything_words(pairs_project: Project, alice: Any) -> None:
    make_pair_items(pairs_project, 1)
    default = text_of(login(alice).get(LABEL_PAGE).content.decode(),
                      r'<template data-role="end-default">(.*?)</template>')
    assert text_of(default, r'data-role="end-title">(.*?)<') == "Nothing left for you"
    assert "You have answered every item open to you" in default


def test_a_closed_rounds_refusal_does_not_ask_for_the_next_item_the_page_shows_anyway(
    pairs_project: Project, alice: Any
) -> None:
    (item,) = make_pair_items(pairs_project, 1, round_number=1)
    assert queue.serve_next_item(pairs_project, alice).item_id == item.pk
    PairRound.objects.filter(project=pairs_project, number=1).update(status=PairRound.Status.CLOSED)
    with pytest.raises(queue.RoundClosed) as refused:
        queue.record_judgement(pairs_project, alice, item.pk, "H")
    assert refused.value.message.endswith("your answer was not recorded.")
    assert "next item" not in refused.value.message.lower()
