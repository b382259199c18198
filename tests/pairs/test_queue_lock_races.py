"""Requests that wait for a judge's lock see what the request before them did (PostgreSQL).

A single ``SELECT ... FOR UPDATE`` that waits for a lock re-reads the locked row only; its subqueries keep the
snapshot from before the wait. When the judge's lock query read everything in one statement, a request queued
behind the judge's other request did not see the serve that request made (the judge got a second item), and one
queued behind an admin blocking them did not see the block (the blocked judge's answer counted). Each test makes
the second request wait on the lock for certain, then checks what it did.

Run with PostgreSQL (SQLite runs one write transaction at a time):

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \\
        .venv/bin/python -m pytest tests/pairs/test_queue_lock_races.py -q -p no:cacheprovider
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection, connections, transaction

from annotate.models import BlockedJudge, Membership, PairConfig, PairItem, PairJudgement, Project
from annotate.services.pairs import queue
from annotate.services.pairs.flags import block_judge
from tests.conftest import make_user, needs_postgres
from tests.pairs.conftest import make_pair_items

pytestmark = [pytest.mark.django_db(transaction=True), needs_postgres]


def in_thread(target: Any, *args: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """Run target(*args) on its own connection; the result or the exception lands in the returned dict."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = target(*args)
        except Exception as error:  # noqa: BLE001 - the test reads it
            outcome["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def wait_until_someone_waits_for_a_lock(timeout: float = 10.0) -> None:
    """Until another connection is blocked on a lock (pg_locks says a lock is not granted)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
            if cursor.fetchone()[0]:
                return
        time.sleep(0.02)
    raise AssertionError("the other request never waited for the judge's lock")


@pytest.fixture
def scene(admin_user: Any) -> tuple[Project, Any]:
    project = Project.objects.create(name="Races", slug="races", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=project)
    judge = make_user("racer")
    Membership.objects.create(project=project, user=judge, role=Membership.Role.ANNOTATOR)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    make_pair_items(project, 3)
    return project, judge


def lock_judge_row(project: Project, judge: Any) -> None:
    list(Membership.objects.select_for_update().filter(project=project, user=judge).values_list("pk"))


def test_a_next_item_request_queued_behind_another_gets_the_same_item(scene: tuple[Project, Any]) -> None:
    project, judge = scene
    with transaction.atomic():
        # The judge's first request holds the lock and serves an item; the second queues behind it.
        lock_judge_row(project, judge)
        first = queue.serve_next_item(project, judge)
        thread, outcome = in_thread(queue.serve_next_item, project, judge)
        wait_until_someone_waits_for_a_lock()
    thread.join(30)
    assert not thread.is_alive() and "error" not in outcome, outcome
    assert outcome["result"].item_id == first.item_id  # the item on their screen, not a second one
    assert PairJudgement.objects.filter(judge=judge, answered_at__isnull=True).count() == 1
    assert sorted(PairItem.objects.filter(project=project).values_list("taken", flat=True)) == [0, 0, 1]


def test_an_answer_queued_behind_a_block_is_refused_and_not_counted(scene: tuple[Project, Any], admin_user: Any
                                                                    ) -> None:
    project, judge = scene
    served = queue.serve_next_item(project, judge)
    with transaction.atomic():
        # The admin's block holds the judge's lock; the judge's answer arrives meanwhile and waits.
        lock_judge_row(project, judge)
        thread, outcome = in_thread(queue.record_judgement, project, judge, served.item_id, "H")
        wait_until_someone_waits_for_a_lock()
        block_judge(project, judge, by=admin_user, reason="answers everything H in a second")
    thread.join(30)
    assert not thread.is_alive()
    assert isinstance(outcome.get("error"), queue.JudgeBlocked), outcome
    assert BlockedJudge.objects.filter(project=project, judge=judge).exists()
    assert not PairJudgement.objects.filter(judge=judge, counted=True).exists()
    item = PairItem.objects.get(pk=served.item_id)
    assert (item.votes_h, item.taken) == (0, 0)
