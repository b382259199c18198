"""The pairs project page and the labeling page count a judge's items left the same way, an item on screen or not."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from annotate.models import PairItem, PairRound, Project
from annotate.services.pairs import queue
from tests.conftest import login
from tests.pairs.conftest import Clock, make_pair_items
from tests.pairs.page_helpers import PAGE, text_of

pytestmark = pytest.mark.django_db

LABEL_PAGE = "/projects/pairs/pairs/label/"
NEXT = "/api/pairs/next/?project=pairs"


def project_page_left(user: Any) -> int:
    html = login(user).get(PAGE).content.decode()
    assert "item" in text_of(html, r'data-role="left">\d+</strong>\s*(items?) left for you')
    return int(text_of(html, r'data-role="left">(\d+)<'))


def label_page_left(user: Any) -> int:
    """What the labeling page shows before its script asks for an item (the figure it starts from)."""
    response = login(user).get(LABEL_PAGE)
    assert response.status_code == 200
    assert 'data-role="left-noun">items</span> left for you' in response.content.decode()
    return response.context["api"]["progress"]["left"]


def test_both_pages_count_the_item_on_screen_as_left(pairs_project: Project, alice: Any, bob: Any) -> None:
    items = make_pair_items(pairs_project, 5)
    queue.record_judgement(pairs_project, bob, queue.serve_next_item(pairs_project, bob).item_id, "H")
    assert project_page_left(alice) == label_page_left(alice) == 5

    # The labeling page's script asks for her next item: the figure it shows is the API's `left`, as given.
    client = login(alice)
    served = client.get(NEXT).json()
    assert served["id"] == items[0].pk
    assert served["progress"]["left"] == 5 == project_page_left(alice) == label_page_left(alice)

    answered = client.post(f"/api/pairs/{served['id']}/judgements/", {"label": "N"}, content_type="application/json")
    assert answered.status_code == 201
    body = answered.json()
    assert body["next"] is not None and body["progress"]["left"] == 4
    assert body["next"]["progress"]["left"] == 4 == project_page_left(alice) == label_page_left(alice)


def test_the_last_item_on_screen_is_one_left_and_none_once_answered(pairs_project: Project, alice: Any) -> None:
    [item] = make_pair_items(pairs_project, 1)
    client = login(alice)
    assert client.get(NEXT).json()["progress"]["left"] == 1 == project_page_left(alice)
    body = client.post(f"/api/pairs/{item.pk}/judgements/", {"label": "H"}, content_type="application/json").json()
    assert body["next"] is None and body["progress"]["left"] == 0 == project_page_left(alice)


def test_a_serve_of_a_closed_round_or_a_lapsed_serve_is_not_left(
    pairs_project: Project, alice: Any, bob: Any, clock: Clock
) -> None:
    make_pair_items(pairs_project, 3)
    queue.serve_next_item(pairs_project, alice)
    assert queue.judge_progress(pairs_project, alice)["left"] == 3
    # Her serve lapses and is released when someone else asks: that item is never served to her again.
    clock.advance(timedelta(minutes=pairs_project.pair_config.serve_minutes + 1).total_seconds())
    queue.serve_next_item(pairs_project, bob)
    assert queue.judge_progress(pairs_project, alice)["left"] == 2 == project_page_left(alice)
    queue.serve_next_item(pairs_project, alice)
    PairRound.objects.filter(project=pairs_project).update(status=PairRound.Status.CLOSED)
    assert queue.judge_progress(pairs_project, alice)["left"] == 0 == project_page_left(alice)
    assert PairItem.objects.filter(project=pairs_project, state=PairItem.State.OPEN).count() == 3
