"""Two ways a judge run's worker can lose it, found in a deployment review (PostgreSQL, gunicorn, Celery prefork on the
embedded filesystem broker), without a worker here (the real ones: tests/e2e/test_judge_worker_recovery.py).

1. A queued run whose message a worker took and died with (a hung prefork pool, then the whole worker killed and
   started again) stayed "queued 0/25" for good: the starting worker looked at running runs only, and a retried start
   answered the stuck run. A starting worker now queues again a queued run no process executes and no message waits
   for, as synthetic sets and annotate's jobs are, counting ``resumed``.
2. A run whose pool process was killed (kill -9, the OOM killer) is delivered again by Celery (acks_late) and went
   on with ``resumed`` 0, though the endpoint had answered the calls in flight at the kill. The next execution now
   tells such a run by the mark the killed one left and counts it; the next slice of a run that is going on is not
   counted, and neither is a run a starting worker already counted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from annotate.models import Project, Sample
from judging import tasks
from judging.models import Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from judging.services.runs.locks import execution_mark
from tests.judging.broker_queue import messages_in, publish, use_broker_queue
from tests.judging.llm_server import LoopbackLLM
from tests.judging.run_factories import add_samples

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker_queue(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return use_broker_queue(settings, tmp_path, monkeypatch)


@pytest.fixture
def server() -> Any:
    with LoopbackLLM() as loopback:
        yield loopback


def new_run(project: Project, server: LoopbackLLM) -> JudgeRun:
    """A run of the project's judge "loop" (made at the first call), queued and not sent: no message waits for it."""
    judge = Judge.objects.filter(project=project, name="loop").first() or create_judge(
        project, name="loop", kind="rubric", base_url=server.base_url, model="test-model", concurrency=2)
    return runs.start_run(project, judge, queue=False)


# ----------------------------------------------------------------------------- 1. a queued run's lost message


def test_a_worker_start_queues_again_a_queued_run_whose_message_is_gone_and_counts_it(
    project: Project, server: LoopbackLLM, broker_queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 3)
    lost, waiting = new_run(project, server), new_run(project, server)
    publish(tasks.execute_judge_run, waiting.pk)  # its message still waits: a worker will take it
    with django_capture_on_commit_callbacks(execute=False) as queued:
        tasks.resume_judge_runs_on_worker_start()
    assert len(queued) == 1
    assert dict(JudgeRun.objects.values_list("pk", "resumed")) == {lost.pk: 1, waiting.pk: 0}
    assert len(messages_in(broker_queue)) == 1

    runs.execute_run(lost.pk)  # what that message starts: the run is judged, once
    lost.refresh_from_db()
    assert (lost.status, lost.done, lost.resumed) == (JudgeRun.Status.DONE, 3, 1)


def test_a_worker_start_leaves_a_queued_run_alone_while_a_process_executes_it(
    project: Project, server: LoopbackLLM, broker_queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    run = new_run(project, server)
    with runs.execution_lock(run.pk), django_capture_on_commit_callbacks(execute=False) as queued:
        assert runs.resume_stale_runs() == []
    assert queued == [] and JudgeRun.objects.get(pk=run.pk).resumed == 0


def test_a_retried_start_no_longer_answers_a_stuck_run_for_good(
    project: Project, server: LoopbackLLM, broker_queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 2)
    run = new_run(project, server)
    assert runs.start_or_reuse_run(project, run.judge) == (run, False)  # stuck: a retried start answers it
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert runs.resume_stale_runs() == [run.pk]
    assert len(queued) == 1
    runs.execute_run(run.pk)  # what the message queued again starts
    reused, started = runs.start_or_reuse_run(project, run.judge)
    assert started and reused.pk != run.pk  # the stuck run ran; a new start is a new run
    assert JudgeRun.objects.get(pk=run.pk).status == JudgeRun.Status.DONE


# ----------------------------------------------------------------------------- 2. a redelivered run


@pytest.fixture
def killed_execution() -> Iterator[Callable[[JudgeRun], None]]:
    """Leaves a run as an execution killed mid-run does: marked running, some judgements, and the execution's mark
    entered and never left (the process died inside; kept referenced, or collecting it would leave the block)."""
    entered: list[AbstractContextManager[bool]] = []

    def kill(run: JudgeRun) -> None:
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
        sample = Sample.objects.filter(project=run.project).order_by("pk").first()
        Judgement.objects.create(run=run, sample=sample, status="ok", score=5, raw='{"score": 5}', attempts=1)
        entered.append(execution_mark(run.pk))
        entered[-1].__enter__()

    yield kill
    entered.clear()


def test_a_task_delivered_again_after_its_execution_was_killed_counts_a_resumption(
    project: Project, server: LoopbackLLM, killed_execution: Callable[[JudgeRun], None]
) -> None:
    add_samples(project, 4)
    run = new_run(project, server)
    killed_execution(run)
    run = runs.execute_run(run.pk)  # Celery's second delivery of the same task
    assert (run.status, run.done, run.resumed) == (JudgeRun.Status.DONE, 4, 1)
    assert Judgement.objects.filter(run=run).values("sample").distinct().count() == 4
    assert server.chat_calls == 3


def test_the_next_slice_of_a_run_going_on_is_not_a_resumption(
    project: Project, server: LoopbackLLM, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 3)
    run = new_run(project, server)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        sliced = runs.execute_run(run.pk, max_seconds=0)  # stops at once and queues its next slice
    assert sliced.status == JudgeRun.Status.RUNNING and len(queued) == 1
    run = runs.execute_run(run.pk)
    assert (run.status, run.done, run.resumed) == (JudgeRun.Status.DONE, 3, 0)


def test_an_execution_that_stops_on_an_error_leaves_no_mark(project: Project) -> None:
    add_samples(project, 2)
    judge = create_judge(project, name="away", kind="rubric", base_url="http://127.0.0.1:9/v1", model="m",
                         max_retries=0)
    run = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
    assert run.status == JudgeRun.Status.FAILED
    with execution_mark(run.pk) as interrupted:
        assert not interrupted


def test_a_run_a_starting_worker_queued_again_is_counted_once(
    project: Project, server: LoopbackLLM, broker_queue: Path, django_capture_on_commit_callbacks: Any,
    killed_execution: Callable[[JudgeRun], None],
) -> None:
    add_samples(project, 3)
    run = new_run(project, server)
    killed_execution(run)  # the whole worker was killed: no message left to deliver again
    with django_capture_on_commit_callbacks(execute=False) as queued:
        assert runs.resume_stale_runs() == [run.pk]
    assert len(queued) == 1
    run = runs.execute_run(run.pk)
    assert (run.status, run.done, run.resumed) == (JudgeRun.Status.DONE, 3, 1)
