"""A starting worker queues again only the synthetic sets that are orphaned: neither written by a process (the lock)
nor waiting in the embedded broker's queue. A set whose message still waits is in hand, and a second message would
start a second chain of work on it beside the first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from annotate.models import Project
from judging import tasks
from judging.models import Judge, SyntheticSet
from judging.services import synthetic
from tests.judging.broker_queue import messages_in, publish, use_broker_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_queue(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The embedded broker's queue folder, in a folder of the test's own (the worker-start hook reads it)."""
    return use_broker_queue(settings, tmp_path, monkeypatch)


@pytest.fixture
def queued_by_hook(broker_queue: Path, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sets the worker-start hook queues, in order; each also lands in the test's queue folder as a real message,
    as the worker's own `delay` would put it there."""
    queued: list[int] = []

    def delay(set_id: int) -> None:
        queued.append(set_id)
        publish(tasks.execute_synthetic_set, set_id)

    monkeypatch.setattr(tasks.execute_synthetic_set, "delay", delay)
    return queued


def writer(project: Project) -> Judge:
    return Judge.objects.create(project=project, name="writer", kind=Judge.Kind.RUBRIC,
                                base_url="http://127.0.0.1:9/v1", model="test-model")


def a_set(project: Project, judge: Judge, name: str, status: str) -> SyntheticSet:
    return SyntheticSet.objects.create(project=project, name=name, writer=judge, status=status, total=20)


def worker_start() -> None:
    tasks.resume_synthetic_sets_on_worker_start()


def test_a_set_whose_message_waits_in_the_queue_is_not_queued_again(
    project: Project, broker_queue: Path, queued_by_hook: list[int]
) -> None:
    judge = writer(project)
    queued = a_set(project, judge, "queued", SyntheticSet.Status.QUEUED)
    running = a_set(project, judge, "running", SyntheticSet.Status.RUNNING)
    # The first worker has the queued set's message still to take, and a resumption of the running one waiting.
    for waiting in (queued, running):
        publish(tasks.execute_synthetic_set, waiting.pk)
    assert not synthetic.is_set_executing(queued.pk) and not synthetic.is_set_executing(running.pk)

    worker_start()  # a second worker starts beside the first
    worker_start()  # and a third

    assert queued_by_hook == [] and len(messages_in(broker_queue)) == 2
    statuses = dict(SyntheticSet.objects.values_list("pk", "status"))
    assert statuses == {queued.pk: SyntheticSet.Status.QUEUED, running.pk: SyntheticSet.Status.RUNNING}


def test_an_orphaned_set_is_queued_once_however_many_workers_start(
    project: Project, broker_queue: Path, queued_by_hook: list[int]
) -> None:
    judge = writer(project)
    orphaned = a_set(project, judge, "orphaned", SyntheticSet.Status.RUNNING)  # its worker was killed mid-set
    held = a_set(project, judge, "held", SyntheticSet.Status.RUNNING)
    a_set(project, judge, "done", SyntheticSet.Status.DONE)
    SyntheticSet.objects.create(project=project, name="imported", writer=None, status=SyntheticSet.Status.RUNNING)

    with synthetic.execution_lock(held.pk) as locked:
        assert locked
        assert synthetic.resume_stale_synthetic_sets() == [orphaned.pk]
        assert synthetic.resume_stale_synthetic_sets() == []  # its new message now waits
        worker_start()
        assert queued_by_hook == [orphaned.pk]
        (message,) = messages_in(broker_queue)

        # Once a worker takes that message and is killed in turn, the next start queues the set again.
        message.unlink()
        worker_start()
        assert queued_by_hook == [orphaned.pk, orphaned.pk] and len(messages_in(broker_queue)) == 1


def test_a_message_of_another_task_for_the_same_number_does_not_hold_a_set(
    project: Project, broker_queue: Path, queued_by_hook: list[int]
) -> None:
    judge = writer(project)
    orphaned = a_set(project, judge, "orphaned", SyntheticSet.Status.RUNNING)
    waiting = a_set(project, judge, "waiting", SyntheticSet.Status.QUEUED)
    publish(tasks.execute_judge_run, orphaned.pk)  # a judge run's slice that happens to carry the set's number
    publish(tasks.execute_synthetic_set, waiting.pk)

    worker_start()

    assert queued_by_hook == [orphaned.pk]
    assert len(messages_in(broker_queue)) == 3
