"""Scripted judges with known behaviour work a pairs project through the API until nothing is left.

Honest judges answer a hidden truth (with a few fixed slips), a splitter goes
against it on every fourth item, and a spammer answers H on everything in
two seconds. Their work is simulated on one clock (the queue's ``now`` seam):
each judge acts when their time per item since the serve has passed, so the
server-measured seconds are exactly the judges' pace and the answers arrive
in time order, without sleeping.

Afterwards: every item has exactly the judges the consensus rule asks for;
the spammer, and only they, is flagged with the rules their answers trip
(worked out here independently from the answers); blocking them from their
flag puts the items their votes decided back in the queue, the others finish
them, and ``pair_agreement`` equals an independent computation from the table
of answers (alpha by the ``krippendorff`` package from a judges x items
matrix) before and after the block.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

import krippendorff
import numpy as np
import pytest
from django.test import Client

from annotate.models import PairConfig, PairItem, PairJudgement, Project
from annotate.services.pairs.agreement import pair_agreement
from tests.pairs.conftest import Clock, make_judges, make_pair_items

pytestmark = pytest.mark.django_db

ITEMS = 36
HONEST = 6
RETRY_SECONDS = 120.0  # a judge with nothing to do looks again this much later


@dataclass
class ScriptedJudge:
    name: str
    user: Any
    seconds: float  # time per item
    client: Client
    held: int | None = None  # the item served and not yet answered

    def label(self, number: int, truth: str) -> str:
        other = "N" if truth == "H" else "H"
        if self.name == "spammer":
            return "H"
        if self.name == "splitter":
            return other if number % 4 == 0 else truth
        slip = int(self.name.rsplit("-", 1)[1])
        return other if (number * 7 + slip) % 10 == 0 else truth


def truth_of(number: int) -> str:
    return "H" if number % 5 in (0, 1, 2) else "N"


def simulate(judges: list[ScriptedJudge], project: Project, clock: Clock, numbers: dict[int, int]) -> None:
    """Run the judges on one clock until every item is decided and nobody has work."""
    events = [(clock.moment, index, index) for index in range(len(judges))]
    heapq.heapify(events)
    sequence = len(judges)
    for _ in range(10_000):
        if not events:
            return
        moment, _, index = heapq.heappop(events)
        clock.moment = max(clock.moment, moment)
        judge = judges[index]
        if judge.held is None:
            response = judge.client.get(f"/api/pairs/next/?project={project.slug}")
            if response.status_code == 403:  # blocked: they stop
                continue
            assert response.status_code in (200, 204), response.content
            judge.held = response.json()["id"] if response.status_code == 200 else None
        else:
            item_id = judge.held
            label = judge.label(numbers[item_id], truth_of(numbers[item_id]))
            response = judge.client.post(f"/api/pairs/{item_id}/judgements/", {"label": label},
                                         content_type="application/json")
            if response.status_code == 403:
                continue
            assert response.status_code == 201, response.content
            assert response.json()["seconds"] == pytest.approx(judge.seconds)
            following = response.json()["next"]
            judge.held = following["id"] if following else None
        if judge.held is not None:
            delay = judge.seconds
        elif PairItem.objects.filter(project=project, state=PairItem.State.OPEN).exists():
            delay = RETRY_SECONDS
        else:
            continue
        sequence += 1
        heapq.heappush(events, (clock.moment + _seconds(delay), sequence, index))
    raise AssertionError("the simulation did not finish")


def _seconds(value: float) -> Any:
    from datetime import timedelta

    return timedelta(seconds=value)


# --------------------------------------------------------------------------- independent computations


def answers_table(project: Project) -> dict[int, list[tuple[str, str]]]:
    """item id -> [(judge, label)] of counted answers, in answer order."""
    table: dict[int, list[tuple[str, str]]] = {}
    for item_id, judge, label in (
        PairJudgement.objects.filter(item__project=project, counted=True, answered_at__isnull=False)
        .order_by("answered_at", "id")
        .values_list("item_id", "judge__username", "label")
    ):
        table.setdefault(item_id, []).append((judge, label))
    return table


def rule(labels: str) -> tuple[str, str, int]:
    """The consensus rule as DESIGN.md words it (4 judges, 2 more on a split, up to 6, strict majority)."""

    def majority(votes: str) -> str:
        return "H" if votes.count("H") > votes.count("N") else "N" if votes.count("N") > votes.count("H") else ""

    if len(labels) < 4:
        return ("open", "", 4)
    if majority(labels[:4]):
        return ("consensus", majority(labels[:4]), 4)
    if len(labels) < 6:
        return ("open", "", 6)
    return ("consensus", majority(labels[:6]), 6) if majority(labels[:6]) else ("none", "", 6)


def expected_agreement(project: Project) -> dict[str, Any]:
    finished = set(PairItem.objects.filter(project=project, state__in=["consensus", "none"]).values_list("id", flat=True))
    # Of each item, the answers the rule decided it on: an item left decided when a judge was blocked may hold more.
    table = {
        item: answers[: rule("".join(label for _, label in answers))[2]]
        for item, answers in answers_table(project).items() if item in finished
    }
    judges = sorted({judge for answers in table.values() for judge, _ in answers})
    matrix = np.full((len(judges), len(table)), np.nan)
    consensus = agree80 = unanimous = 0
    for column, answers in enumerate(table.values()):
        for judge, label in answers:
            if label != "?":
                matrix[judges.index(judge), column] = 1.0 if label == "H" else 0.0
        votes = [label for _, label in answers if label != "?"]
        h, n = votes.count("H"), votes.count("N")
        consensus += h != n
        agree80 += bool(votes) and max(h, n) / len(votes) >= 0.8
        unanimous += bool(votes) and (h == 0 or n == 0)
    items = len(table)
    return {
        "alpha": krippendorff.alpha(reliability_data=matrix, level_of_measurement="nominal"),
        "items": items,
        "consensus": round(100 * consensus / items, 2),
        "agree80": round(100 * agree80 / items, 2),
        "unanimous": round(100 * unanimous / items, 2),
        "no_consensus": round(100 * (items - consensus) / items, 2),
    }


def expected_flags(project: Project, judge: str, limits: PairConfig) -> set[str]:
    """The spammer rules the judge's answers trip, worked out from the table of answers."""
    rows = list(
        PairJudgement.objects.filter(item__project=project, judge__username=judge, counted=True,
                                     answered_at__isnull=False).values_list("item_id", "label", "seconds")
    )
    if len(rows) < limits.min_judgements:
        return set()
    table = answers_table(project)
    tripped = set()
    if len({label for _, label, _ in rows}) == 1:
        tripped.add("same_label")
    if sum(seconds for _, _, seconds in rows) / len(rows) < limits.spam_min_mean_seconds:
        tripped.add("too_fast")
    compared = differing = 0
    for item_id, label, _ in rows:
        others = [other for name, other in table[item_id] if name != judge]
        h, n = others.count("H"), others.count("N")
        if label == "?" or h == n:
            continue
        compared += 1
        differing += label != ("H" if h > n else "N")
    if compared and differing / compared > limits.spam_max_disagreement:
        tripped.add("disagrees")
    return tripped


def assert_agreement_matches(project: Project) -> dict[str, Any]:
    got = pair_agreement(project)
    want = expected_agreement(project)
    assert got["alpha"] == pytest.approx(want.pop("alpha"), abs=1e-9)
    assert {key: got[key] for key in want} == want
    return got


# --------------------------------------------------------------------------- the run


def test_scripted_judges_work_a_project_through_the_api(pairs_project: Project, admin_user: Any, clock: Clock
                                                        ) -> None:
    # Serves never expire in this run: every judge answers what they are served.
    PairConfig.objects.filter(project=pairs_project).update(serve_minutes=24 * 60)
    items = make_pair_items(pairs_project, ITEMS)
    numbers = {item.pk: number for number, item in enumerate(items)}
    users = make_judges(pairs_project, HONEST, prefix="honest")
    judges = [ScriptedJudge(user.username, user, 25.0 + 5 * index, _client(user)) for index, user in enumerate(users)]
    for name, seconds in (("splitter", 20.0), ("spammer", 2.0)):
        user = make_judges(pairs_project, 1, prefix=name)[0]
        user.username = name
        user.save(update_fields=["username"])
        judges.append(ScriptedJudge(name, user, seconds, _client(user)))

    simulate(judges, pairs_project, clock, numbers)

    # Every item has exactly the judges the rule asks for, and the state and label the rule gives.
    table = answers_table(pairs_project)
    splits = 0
    for item in PairItem.objects.filter(project=pairs_project):
        labels = "".join(label for _, label in table[item.pk])
        state, label, needed = rule(labels)
        assert (item.state, item.label, item.judges_needed) == (state, label, needed), labels
        assert state != "open" and len(labels) == needed == item.taken, labels
        assert len({judge for judge, _ in table[item.pk]}) == needed
        splits += needed == 6
    assert splits > 0  # the splitter and the spammer made some items go to six judges

    # The spammer is flagged with the rules their answers trip (as the admin's flag list shows them, every
    # judge checked again on the answers as they are now); the others' flags follow their answers too.
    config = PairConfig.objects.get(project=pairs_project)
    admin = _client(admin_user)
    listed = admin.get(f"/api/projects/{pairs_project.slug}/flags/").json()
    flagged: dict[str, set[str]] = {}
    for flag in listed:
        flagged.setdefault(flag["judge"], set()).add(flag["rule"])
    assert flagged["spammer"] == expected_flags(pairs_project, "spammer", config) >= {"same_label", "too_fast"}
    for judge in judges:
        assert flagged.get(judge.name, set()) == expected_flags(pairs_project, judge.name, config), judge.name
    assert not any("same_label" in rules or "too_fast" in rules for name, rules in flagged.items() if name != "spammer")
    too_fast = next(flag for flag in listed if flag["judge"] == "spammer" and flag["rule"] == "too_fast")
    assert too_fast["figures"]["mean_seconds"] == 2.0 and too_fast["figures"]["judgements"] == len(
        [1 for answers in table.values() for judge, _ in answers if judge == "spammer"]
    )

    before = assert_agreement_matches(pairs_project)
    assert before["items"] == ITEMS

    # The admin blocks the spammer from the flag; the items their vote decided go back to the queue.
    flag_id = next(flag["id"] for flag in listed if flag["judge"] == "spammer" and flag["rule"] == "same_label")
    spammer_items = set(PairJudgement.objects.filter(judge__username="spammer").values_list("item_id", flat=True))
    decided_by_spammer = {
        item_id for item_id in spammer_items
        if rule("".join(label for judge, label in table[item_id] if judge != "spammer"))[0] == "open"
    }
    assert decided_by_spammer, "the script should make the spammer's vote decide some items"
    blocked = admin.post(f"/api/projects/{pairs_project.slug}/flags/{flag_id}/block/", {"reason": "H in 2 s"},
                         content_type="application/json").json()
    assert blocked["items_recomputed"] == len(spammer_items)
    assert blocked["items_reopened"] == len(decided_by_spammer)
    assert set(PairItem.objects.filter(project=pairs_project, state="open").values_list("id", flat=True)) == (
        decided_by_spammer
    )
    before_block = {item_id: len(answers) for item_id, answers in table.items()}

    simulate(judges, pairs_project, clock, numbers)

    table = answers_table(pairs_project)
    assert all(judge != "spammer" for answers in table.values() for judge, _ in answers)
    for item in PairItem.objects.filter(project=pairs_project):
        labels = "".join(label for _, label in table[item.pk])
        state, label, needed = rule(labels)
        assert (item.state, item.label, item.judges_needed) == (state, label, needed), labels
        assert state != "open"
        if item.pk in decided_by_spammer:
            # Reopened: judges were added only up to what the rule asks for.
            assert len(labels) == needed
        else:
            # Left decided: the answers that remain, none added.
            assert len(labels) == before_block[item.pk] - (item.pk in spammer_items)
    after = assert_agreement_matches(pairs_project)
    assert after["items"] == ITEMS and after["alpha"] != before["alpha"]
    # Without the spammer, the honest judges and the splitter are checked on answers free of the spammer's H.
    listed = admin.get(f"/api/projects/{pairs_project.slug}/flags/").json()
    for judge in judges[:-1]:
        rules = {flag["rule"] for flag in listed if flag["judge"] == judge.name}
        assert rules == expected_flags(pairs_project, judge.name, config), judge.name
    assert {flag["status"] for flag in listed if flag["judge"] == "spammer"} == {"blocked"}
    # With the spammer's H gone from the others' majorities, no honest judge is flagged any more.
    assert {flag["judge"] for flag in listed} == {"spammer"}


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client
