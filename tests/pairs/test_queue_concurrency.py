"""Many judges at once on PostgreSQL: row locks, not luck, keep items from getting more judges than they need.

Each thread has its own database connection and works like a judge: ask for
the next item, answer it, ask again, until every item is decided (a start
line makes them ask at the same moment; a judge with nothing to do for now
asks again shortly, as a person would: a split elsewhere may need two more
judges). Afterwards the rows are counted: no item holds
more judgements than it needs, every answer a thread was told it made is
there exactly once, and nobody was served the same item twice.

Run with PostgreSQL (SQLite runs one write transaction at a time, so it
cannot show what the locks do):

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \
        .venv/bin/python -m pytest tests/pairs/test_queue_concurrency.py -q -p no:cacheprovider
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.db import connections

from annotate.models import Membership, PairConfig, PairItem, PairJudgement, Project
from annotate.services.pairs import queue
from tests.conftest import make_user, needs_postgres
from tests.pairs.conftest import make_pair_items

pytestmark = [
    pytest.mark.django_db(transaction=True),
    needs_postgres,
]

JUDGES = 16
ITEMS = 40


@dataclass
class JudgeLog:
    """What one judge thread was served and told."""

    served: list[int] = field(default_factory=list)  # item ids, in the order they came
    answered: dict[int, tuple[int, str]] = field(default_factory=dict)  # item id -> (judgement id, label)
    errors: list[str] = field(default_factory=list)


def label_for(judge_index: int, item_id: int) -> str:
    """A fixed mix of H, N and ?, so items split, escalate and some end without consensus."""
    return "HHNH?N"[(judge_index * 7 + item_id * 3) % 6]


def work(project_id: int, user_id: int, index: int, start_line: threading.Barrier, log: JudgeLog,
         combined: bool) -> None:
    from django.contrib.auth import get_user_model

    try:
        project = Project.objects.get(pk=project_id)
        user = get_user_model().objects.get(pk=user_id)
        start_line.wait(timeout=60)
        deadline = time.monotonic() + 90
        served = queue.serve_next_item(project, user)
        while time.monotonic() < deadline:
            if served is None:
                # Nothing for this judge now; a split elsewhere may still ask for two more judges.
                if not PairItem.objects.filter(project=project, state=PairItem.State.OPEN).exists():
                    break
                time.sleep(0.02)
                served = queue.serve_next_item(project, user)
                continue
            log.served.append(served.item_id)
            label = label_for(index, served.item_id)
            if combined:
                result = queue.record_and_serve_next(project, user, served.item_id, label)
                judgement, served = result.judgement, result.next
            else:
                judgement = queue.record_judgement(project, user, served.item_id, label)
                served = queue.serve_next_item(project, user)
            log.answered[judgement.item_id] = (judgement.pk, judgement.label)
    except Exception as error:  # noqa: BLE001  (reported by the test, with the thread's name)
        log.errors.append(f"judge {index}: {type(error).__name__}: {error}")
    finally:
        connections.close_all()


@pytest.mark.parametrize("combined", [False, True], ids=["answer-then-next", "answer-and-next"])
def test_many_judges_at_once_never_over_assign_lose_or_duplicate(admin_user: Any, combined: bool) -> None:
    project = Project.objects.create(name="Concurrent", slug="concurrent", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=project)
    judges = []
    for index in range(JUDGES):
        user = make_user(f"racer-{index:02d}")
        Membership.objects.create(project=project, user=user, role=Membership.Role.ANNOTATOR)
        judges.append(user)
    make_pair_items(project, ITEMS)
    logs = [JudgeLog() for _ in judges]
    start_line = threading.Barrier(JUDGES)
    threads = [
        threading.Thread(target=work, args=(project.pk, user.pk, index, start_line, logs[index], combined))
        for index, user in enumerate(judges)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "a judge thread hung (a lock never released?)"
    errors = [error for log in logs for error in log.errors]
    assert not errors, "\n".join(errors)

    rows = list(PairJudgement.objects.filter(item__project=project).values_list("id", "item_id", "judge_id", "label"))
    # Nobody was served the same item twice, and everyone answered what they were served.
    for log in logs:
        assert len(log.served) == len(set(log.served))
        assert set(log.served) == set(log.answered)
    # No lost and no duplicated judgement: the rows are exactly the answers the judges were told they made.
    told = {judgement_id: (item_id, label) for log in logs for item_id, (judgement_id, label) in log.answered.items()}
    assert len(rows) == len(told) == sum(len(log.answered) for log in logs)
    assert {row[0]: (row[1], row[3]) for row in rows} == told
    assert max(Counter((item_id, judge_id) for _, item_id, judge_id, _ in rows).values()) == 1
    # No item got more judgements than it needs; every item was decided, with consistent counters.
    per_item = Counter(item_id for _, item_id, _, _ in rows)
    for item in PairItem.objects.filter(project=project):
        labels = [label for _, item_id, _, label in rows if item_id == item.pk]
        assert per_item[item.pk] == item.judges_needed == item.taken, item
        assert item.state in (PairItem.State.CONSENSUS, PairItem.State.NO_CONSENSUS)
        assert (item.votes_h, item.votes_n, item.votes_unsure) == tuple(labels.count(x) for x in "HN?")
    assert {item.judges_needed for item in PairItem.objects.filter(project=project)} >= {4, 6}
