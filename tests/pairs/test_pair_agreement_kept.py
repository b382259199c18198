"""A pairs project's agreement is worked out once per data version (results_cache.current_figures) for the API, the
round API, the round page and the project page, and every write it rests on (an answer, a taken-back answer, a judge
blocked, a new round) changes what they serve."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from annotate.models import PairItem, Project
from annotate.services import results_cache
from annotate.services.pairs import flags, queue
from annotate.services.pairs.agreement import pair_agreement
from tests.conftest import login
from tests.pairs.conftest import Clock, make_judges, make_pair_items

pytestmark = pytest.mark.django_db

LABELS = "HHNH", "NNNN", "HNHH"  # by item, in the judges' order


def answer_next(project: Project, judge: Any, labels: dict[int, str], clock: Clock) -> None:
    served = queue.serve_next_item(project, judge)
    assert served is not None
    clock.advance(20)
    queue.record_judgement(project, judge, served.item_id, labels[served.item_id])


@pytest.fixture
def judged(pairs_project: Project, clock: Clock) -> dict[str, Any]:
    """Three items needing four answers each; the first three judges answer all, the fourth two of them: two items
    are finished, one is open."""
    items = make_pair_items(pairs_project, 3)
    assert {item.judges_needed for item in items} == {4}
    judges = make_judges(pairs_project, 4)
    for index, judge in enumerate(judges):
        labels = {item.pk: LABELS[position][index] for position, item in enumerate(items)}
        for _ in range(3 if index < 3 else 2):
            answer_next(pairs_project, judge, labels, clock)
    assert PairItem.objects.filter(state=PairItem.State.OPEN).count() == 1
    return {"project": pairs_project, "items": items, "judges": judges, "clock": clock}


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The round number of every pair agreement worked out (None: every round)."""
    calls: list[Any] = []
    original = results_cache.FIGURE_SETS.get("pair-agreement")

    def counting(project: Project, **query: Any) -> Any:
        calls.append(query.get("round_number"))
        return original(project, **query)  # type: ignore[misc]

    monkeypatch.setitem(results_cache.FIGURE_SETS, "pair-agreement", counting)
    return calls


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def test_every_reader_of_the_pair_agreement_shares_one_computation_per_data_version(
    judged: dict[str, Any], computed: list[Any], admin_user: Any
) -> None:
    client = login(admin_user)
    overall = client.get("/api/projects/pairs/pair-agreement/").json()
    assert overall == as_json(pair_agreement(judged["project"])) and overall["items"] == 2
    assert client.get("/api/projects/pairs/pair-agreement/").json() == overall
    assert client.get("/projects/pairs/").status_code == 200  # the project page: every round
    assert computed == [None]
    round_one = client.get("/api/projects/pairs/pair-agreement/?round=1").json()
    assert round_one == as_json(pair_agreement(judged["project"], 1))
    assert client.get("/api/projects/pairs/pair-rounds/1/").json()["agreement"] == round_one
    page = client.get("/projects/pairs/pairs/rounds/1/")
    assert page.status_code == 200 and page.context["agreement"] == round_one
    assert computed == [None, 1]


def answer(judged: dict[str, Any]) -> None:
    labels = {item.pk: LABELS[position][3] for position, item in enumerate(judged["items"])}
    answer_next(judged["project"], judged["judges"][3], labels, judged["clock"])  # the open item finishes


def take_back(judged: dict[str, Any]) -> None:
    judged["clock"].advance(5)
    assert queue.undo_last_judgement(judged["project"], judged["judges"][3]) is not None  # an item opens again


def block(judged: dict[str, Any]) -> None:
    flags.block_judge(judged["project"], judged["judges"][0], None, "")  # every finished item opens again


def new_round(judged: dict[str, Any]) -> None:
    make_pair_items(judged["project"], 1, round_number=2)  # listed among the rounds, with no figures yet


@pytest.mark.parametrize("write", [answer, take_back, block, new_round])
def test_every_write_the_pair_agreement_rests_on_changes_what_is_served(
    judged: dict[str, Any], computed: list[Any], admin_user: Any, write: Callable[[dict[str, Any]], None]
) -> None:
    client = login(admin_user)
    before = client.get("/api/projects/pairs/pair-agreement/").json()
    write(judged)
    after = client.get("/api/projects/pairs/pair-agreement/").json()
    assert computed == [None, None]
    assert after != before and after == as_json(pair_agreement(judged["project"]))
