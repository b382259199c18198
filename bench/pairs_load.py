"""The load of bench_pairs_queue: pair judges with API tokens, one client thread each, and the count afterwards.

A judge thread asks for its next item (GET /api/pairs/next/), then loops:
POST /api/pairs/<id>/judgements/ with its label, and takes the next item from
the answer's ``next`` (one request per answer: answer-and-next). When nothing
is left for it, it asks again a moment later. In the "read" mode it only asks
for its next item, again and again (the server returns the item it holds):
the baseline. Every request's latency and status is recorded, with what the
judge was shown and told.
"""

from __future__ import annotations

import json
import random
import threading
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from _common import ApiConnection, ClientOutcome, TokenUser, add_token_annotators, paced_turns, run_client_threads

IDLE_SECONDS = 0.2  # a judge with nothing to do asks again this much later

Judge = TokenUser  # a pair judge is an annotator of the pairs project


@dataclass
class Outcome(ClientOutcome):
    """What one judge thread sent, was shown and was told."""

    shown: list[int] = field(default_factory=list)  # item ids served to the judge, each time it was shown a new one
    answered: dict[int, str] = field(default_factory=dict)  # item id -> label, from 201 answers


@dataclass
class Count:
    """The rows against what the judges were told."""

    items: int = 0
    decided: int = 0
    judgements: int = 0  # answered rows
    acknowledged: int = 0  # 201 answers
    over_assigned: int = 0  # items with more judgements (or slots taken) than they need
    lost: int = 0  # a 201 whose row is missing or holds another label
    duplicated: int = 0  # answered rows nobody was told about, or two rows of one judge on one item
    served_twice: int = 0  # a judge shown an item again after answering it
    counters_off: int = 0  # items whose vote counters differ from their answered rows

    @property
    def bad(self) -> int:
        return self.over_assigned + self.lost + self.duplicated + self.served_twice + self.counters_off


def label_for(username: str, item_id: int) -> str:
    """A fixed answer per judge and item: the item's "truth" mostly, a disagreement sometimes, now and then "?"."""
    truth = "H" if item_id % 5 < 3 else "N"
    roll = zlib.crc32(f"{username}:{item_id}".encode()) % 100
    if roll < 3:
        return "?"
    if roll < 18:
        return "N" if truth == "H" else "H"
    return truth


def judge_loop(judge: Judge, port: int, slug: str, until: float, seed: int, start_line: threading.Barrier,
               pace: float, mode: str) -> Outcome:
    """Work until ``until``: back to back (pace 0), or starting a request every ``pace`` seconds on average."""
    rng = random.Random(seed)
    outcome = Outcome(judge.username)
    api = ApiConnection(port, judge.token, outcome)
    held: int | None = None
    start_line.wait()
    for _ in paced_turns(rng, until, pace):
        if held is None or mode == "read":
            kind, method, path, payload = "next", "GET", f"/api/pairs/next/?project={slug}", None
        else:
            kind, method, path = "answer", "POST", f"/api/pairs/{held}/judgements/"
            payload = json.dumps({"label": label_for(judge.username, held)})
        answer = api.send(kind, method, path, payload)
        if answer is None:
            continue
        status, content = answer
        if kind == "next" and status == 200:
            item = json.loads(content)["id"]
            if item != held:
                outcome.shown.append(item)
            held = item
        elif kind == "next" and status == 204:
            held = None
            if not pace:
                time.sleep(IDLE_SECONDS)
        elif kind == "answer" and status == 201:
            body = json.loads(content)
            outcome.answered[body["item"]] = body["label"]
            held = body["next"]["id"] if body["next"] else None
            if held is not None:
                outcome.shown.append(held)
        else:
            outcome.note_unexpected(method, path, status, content)
            held = None
    api.close()
    return outcome


def run_judges(judges: list[Judge], port: int, slug: str, seconds: float, seed: int, pace: float = 0.0,
               mode: str = "answer") -> tuple[list[Outcome], float, float]:
    """One thread per judge for ``seconds``; returns the outcomes and the start/end clock."""

    def judge_thread(index: int, until: float, start_line: threading.Barrier) -> Outcome:
        return judge_loop(judges[index], port, slug, until, seed * 1000 + index, start_line, pace, mode)

    return run_client_threads(len(judges), judge_thread, seconds, "judge")


def count_rows(project: Any, outcomes: list[Outcome]) -> Count:
    """Compare the project's rows with what the judges were shown and told."""
    from annotate.models import PairItem, PairJudgement

    count = Count()
    rows = list(
        PairJudgement.objects.filter(item__project=project).values_list(
            "item_id", "judge__username", "label", "counted", "answered_at"
        )
    )
    answered = {(item, judge): label for item, judge, label, counted, at in rows if at is not None}
    count.judgements = len(answered)
    per_pair = Counter((item, judge) for item, judge, *_ in rows)
    count.duplicated = sum(n - 1 for n in per_pair.values() if n > 1)
    told = {(item, outcome.username): label for outcome in outcomes for item, label in outcome.answered.items()}
    count.acknowledged = len(told)
    count.lost = sum(1 for key, label in told.items() if answered.get(key) != label)
    count.duplicated += sum(1 for key in answered if key not in told)
    for outcome in outcomes:
        seen: set[int] = set()
        for item in outcome.shown:
            count.served_twice += item in seen
            seen.add(item)
    holding = Counter(item for item, _, _, counted, _ in rows if counted)
    labels: dict[int, list[str]] = {}
    for (item, _), label in answered.items():
        labels.setdefault(item, []).append(label)
    for item in PairItem.objects.filter(project=project).values(
        "id", "judges_needed", "taken", "state", "votes_h", "votes_n", "votes_unsure"
    ):
        count.items += 1
        count.decided += item["state"] in ("consensus", "none")
        mine = labels.get(item["id"], [])
        if len(mine) > item["judges_needed"] or item["taken"] > item["judges_needed"] or (
            holding[item["id"]] > item["judges_needed"]
        ):
            count.over_assigned += 1
        if (item["votes_h"], item["votes_n"], item["votes_unsure"]) != tuple(mine.count(x) for x in "HN?"):
            count.counters_off += 1
    return count


def make_judges(prefix: str, count: int, project: Any) -> list[Judge]:
    return [judge for _, judge in add_token_annotators(prefix, count, project)]
