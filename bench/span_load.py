"""The load of bench_span_save: annotators with API tokens, one client thread each saving spans over HTTP,
and the check of the rows in the database against what the clients were told.

A client sends 70% POST /api/spans/ (create, each with a unique tag in its
note) and 30% PATCH /api/spans/<id>/ of one of its own spans with the version
it last read; every request's latency and status is recorded.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from _common import ApiConnection, ClientOutcome, TokenUser, add_token_annotators, paced_turns, run_client_threads

CREATE_SHARE = 0.7
LABEL_CHOICES = [
    ["Unwanted", "Unwanted.Intrinsic"],
    ["Unwanted", "Unwanted.Extrinsic"],
    ["Questionable"],
    ["Benign"],
]


Annotator = TokenUser  # an annotator of the project, assigned the batch whose samples it saves spans on


@dataclass
class Outcome(ClientOutcome):
    """What one client thread sent and saw."""

    created: dict[str, int] = field(default_factory=dict)  # tag -> span id, from 201 answers
    versions: dict[int, tuple[int, list[str]]] = field(default_factory=dict)  # span id -> (version, labels)


@dataclass
class Check:
    rows: int = 0
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    unacknowledged: int = 0
    lost_updates: int = 0
    per_annotator_mismatch: int = 0


def fresh_offsets(rng: random.Random, samples: list[tuple[int, int]], used: set[tuple[int, int, int]]
                  ) -> tuple[int, int, int]:
    """A (sample, start, end) this annotator has not saved yet: the app stores an identical span only once."""
    while True:
        sample_id, length = rng.choice(samples)
        start = rng.randrange(0, length - 1)
        # Two characters at least: the texts are words with single spaces, so a range always holds a word's letter
        # (a span of white space alone is refused with 400).
        chosen = (sample_id, start, min(length, start + rng.randint(2, 40)))
        if chosen not in used:
            used.add(chosen)
            return chosen


def client_loop(annotator: Annotator, port: int, samples: list[tuple[int, int]], until: float, seed: int,
                start_line: threading.Barrier, pace: float) -> Outcome:
    """Save spans until ``until``: back to back (pace 0), or starting one every ``pace`` seconds on average."""
    rng = random.Random(seed)
    outcome = Outcome(annotator.username)
    api = ApiConnection(port, annotator.token, outcome)
    mine: list[int] = []
    used: set[tuple[int, int, int]] = set()
    number = 0
    start_line.wait()
    for _ in paced_turns(rng, until, pace):
        number += 1
        sample_id, start, end = fresh_offsets(rng, samples, used)
        labels = rng.choice(LABEL_CHOICES)
        if mine and rng.random() >= CREATE_SHARE:
            kind, span_id = "patch", rng.choice(mine)
            version = outcome.versions[span_id][0]
            method, path = "PATCH", f"/api/spans/{span_id}/"
            body: dict[str, Any] = {"version": version, "labels": labels}
        else:
            kind, span_id = "create", 0
            tag = f"{annotator.username}#{number}"
            method, path = "POST", "/api/spans/"
            body = {"sample": sample_id, "round": 1, "start": start, "end": end, "labels": labels, "note": tag}
        answer = api.send(kind, method, path, json.dumps(body))
        if answer is None:
            continue
        status, content = answer
        if status == 201 and kind == "create":
            saved = json.loads(content)
            outcome.created[tag] = saved["id"]
            outcome.versions[saved["id"]] = (saved["version"], saved["labels"])
            mine.append(saved["id"])
        elif status == 200 and kind == "patch":
            saved = json.loads(content)
            outcome.versions[span_id] = (saved["version"], saved["labels"])
        elif status == 409 and kind == "patch":
            current = json.loads(content).get("current")
            if current:
                outcome.versions[span_id] = (current["version"], current["labels"])
        else:
            outcome.note_unexpected(method, path, status, content)
    api.close()
    return outcome


def run_clients(annotators: list[Annotator], port: int, samples: list[tuple[int, int]], seconds: float,
                seed: int, pace: float = 0.0) -> tuple[list[Outcome], float, float]:
    """Run one client thread per annotator for ``seconds``; returns outcomes and the start/end clock."""

    def client_thread(index: int, until: float, start_line: threading.Barrier) -> Outcome:
        return client_loop(annotators[index], port, samples, until, seed * 1000 + index, start_line, pace)

    return run_client_threads(len(annotators), client_thread, seconds, "client")


def check_rows(outcomes: list[Outcome]) -> Check:
    """Compare the database with what the clients were told."""
    from annotate.models import SpanAnnotation

    check = Check()
    names = [outcome.username for outcome in outcomes]
    rows = list(
        SpanAnnotation.objects.filter(annotator__username__in=names).values_list(
            "id", "annotator__username", "note", "version", "labels"
        )
    )
    check.rows = len(rows)
    by_tag = Counter(note for _, _, note, _, _ in rows)
    by_id = {row[0]: row for row in rows}
    rows_per_annotator = Counter(username for _, username, _, _, _ in rows)
    for outcome in outcomes:
        check.acknowledged += len(outcome.created)
        if rows_per_annotator[outcome.username] != len(outcome.created):
            check.per_annotator_mismatch += 1
        for tag, span_id in outcome.created.items():
            row = by_id.get(span_id)
            if row is None or row[2] != tag:
                check.lost += 1
        for span_id, (version, labels) in outcome.versions.items():
            row = by_id.get(span_id)
            if row is not None and (row[3] != version or row[4] != labels):
                check.lost_updates += 1
    acknowledged_tags = {tag for outcome in outcomes for tag in outcome.created}
    check.duplicated = sum(count - 1 for count in by_tag.values() if count > 1)
    check.unacknowledged = sum(count for tag, count in by_tag.items() if tag not in acknowledged_tags)
    return check


def make_annotators(prefix: str, count: int, batch: Any, project: Any) -> list[Annotator]:
    """``count`` annotators of ``project`` with API tokens, each assigned ``batch`` in round 1."""
    from annotate.models import Assignment

    annotators = []
    for user, annotator in add_token_annotators(prefix, count, project):
        Assignment.objects.create(batch=batch, annotator=user, round=1)
        annotators.append(annotator)
    return annotators
