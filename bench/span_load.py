"""The load of bench_span_save: annotators with API tokens, one client thread each saving spans over HTTP,
and the check of the rows in the database against what the clients were told.

A client sends 70% POST /api/spans/ (create, each with a unique tag in its
note) and 30% PATCH /api/spans/<id>/ of one of its own spans with the version
it last read; every request's latency and status is recorded.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

CREATE_SHARE = 0.7
LABEL_CHOICES = [
    ["Unwanted", "Unwanted.Intrinsic"],
    ["Unwanted", "Unwanted.Extrinsic"],
    ["Questionable"],
    ["Benign"],
]


@dataclass
class Annotator:
    username: str
    token: str


@dataclass
class Outcome:
    """What one client thread sent and saw."""

    username: str
    records: list[tuple[float, float, str, int]] = field(default_factory=list)  # (sent at, seconds, kind, status)
    created: dict[str, int] = field(default_factory=dict)  # tag -> span id, from 201 answers
    versions: dict[int, tuple[int, list[str]]] = field(default_factory=dict)  # span id -> (version, labels)
    failures: list[str] = field(default_factory=list)


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
        chosen = (sample_id, start, min(length, start + rng.randint(1, 40)))
        if chosen not in used:
            used.add(chosen)
            return chosen


def client_loop(annotator: Annotator, port: int, samples: list[tuple[int, int]], until: float, seed: int,
                start_line: threading.Barrier, pace: float) -> Outcome:
    """Save spans until ``until``: back to back (pace 0), or starting one every ``pace`` seconds on average."""
    rng = random.Random(seed)
    outcome = Outcome(annotator.username)
    headers = {"Authorization": f"Token {annotator.token}", "Content-Type": "application/json",
               "Accept": "application/json"}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    mine: list[int] = []
    used: set[tuple[int, int, int]] = set()
    number = 0
    start_line.wait()
    # Paced: saves start on a schedule (intervals uniform in 0.5-1.5 x pace), so a slow answer does not
    # lower the offered rate; annotators start at random offsets, not all at once.
    next_save = time.perf_counter() + (rng.uniform(0, pace) if pace else 0.0)
    while time.perf_counter() < until:
        if pace:
            wait = next_save - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            if time.perf_counter() >= until:
                break
            next_save = max(next_save + pace * rng.uniform(0.5, 1.5), time.perf_counter())
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
        payload = json.dumps(body)
        sent = time.perf_counter()
        try:
            connection.request(method, path, payload, headers)
            response = connection.getresponse()
            content = response.read()
            status = response.status
        except (OSError, http.client.HTTPException) as error:
            took = time.perf_counter() - sent
            outcome.records.append((sent, took, kind, 0))
            outcome.failures.append(f"{method} {path}: {type(error).__name__}: {error}")
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            continue
        took = time.perf_counter() - sent
        outcome.records.append((sent, took, kind, status))
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
            outcome.failures.append(f"{method} {path}: {status} {content[:200]!r}")
    connection.close()
    return outcome


def run_clients(annotators: list[Annotator], port: int, samples: list[tuple[int, int]], seconds: float,
                seed: int, pace: float = 0.0) -> tuple[list[Outcome], float, float]:
    """Run one client thread per annotator for ``seconds``; returns outcomes and the start/end clock."""
    results: list[Outcome | None] = [None] * len(annotators)
    start_line = threading.Barrier(len(annotators) + 1)
    until_holder: dict[str, float] = {}

    def work(index: int) -> None:
        results[index] = client_loop(annotators[index], port, samples, until_holder["until"], seed * 1000 + index,
                                     start_line, pace)

    threads = [threading.Thread(target=work, args=(index,), daemon=True) for index in range(len(annotators))]
    began = time.perf_counter()
    until_holder["until"] = began + seconds
    for thread in threads:
        thread.start()
    start_line.wait()
    for thread in threads:
        thread.join(seconds + 120)
    ended = time.perf_counter()
    if any(result is None for result in results):
        raise SystemExit("bench: a client thread did not finish")
    return [result for result in results if result is not None], began, ended


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
    from django.contrib.auth import get_user_model

    from annotate.models import Assignment, Membership
    from annotate.services.tokens import create_api_token

    annotators = []
    for index in range(count):
        user = get_user_model().objects.create_user(username=f"{prefix}-{index:02d}")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        Assignment.objects.create(batch=batch, annotator=user, round=1)
        annotators.append(Annotator(user.username, create_api_token(user, "bench")[1]))
    return annotators
