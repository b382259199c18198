"""A run resumed after its worker stopped mid-run counts it (`resumed`), and says so beside its calls, tokens and
cost: the requests that worker had in flight reach no judgement, so those figures leave them out."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Project
from judging import tasks
from judging.models import Judge, JudgeRun
from judging.services import runs
from tests.conftest import login
from tests.judging.broker_queue import messages_in, publish, use_broker_queue
from tests.judging.run_factories import add_samples

pytestmark = pytest.mark.django_db

CONCURRENCY = 3


def text_of(html: str) -> str:
    """The page's words, tags dropped and spaces squeezed."""
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def resumed_note(html: str) -> str | None:
    """The words of the progress row's resumption note, or None when there is none."""
    note = re.search(r'<span class="small" data-role="run-resumed">(.*?)</span>', html, re.S)
    return None if note is None else text_of(note.group(1))


def rubric_judge(project: Project) -> Judge:
    return Judge.objects.create(project=project, name="loop", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                model="test-model", concurrency=CONCURRENCY)


def finished_run(project: Project, judge: Judge, *, resumed: int) -> JudgeRun:
    return JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=4, done=4,
                                   scored=4, calls=4, resumed=resumed)


def run_page(client: Client, run: JudgeRun, **headers: Any) -> str:
    return client.get(reverse("judging-run", args=[run.project.slug, run.pk]), **headers).content.decode()


# ----------------------------------------------------------------------------- counting


def test_each_worker_start_that_queues_an_orphaned_run_again_counts_one_resumption(
    project: Project, broker_queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 2)
    judge = rubric_judge(project)
    orphaned, held, waiting, done = (runs.start_run(project, judge, queue=False) for _ in range(4))
    JudgeRun.objects.filter(pk__in=[orphaned.pk, held.pk]).update(status=JudgeRun.Status.RUNNING)
    JudgeRun.objects.filter(pk=done.pk).update(status=JudgeRun.Status.DONE)
    queue_slice(waiting)  # queued, and its message waits in the queue
    with runs.execution_lock(held.pk), django_capture_on_commit_callbacks(execute=False) as queued:
        assert runs.resume_stale_runs() == [orphaned.pk]
        assert runs.resume_stale_runs() == [orphaned.pk]
    assert len(queued) == 2
    counts = dict(JudgeRun.objects.values_list("pk", "resumed"))
    # The executing run, the queued one (its message is still in the queue) and the finished one are not resumed.
    assert counts == {orphaned.pk: 2, held.pk: 0, waiting.pk: 0, done.pk: 0}


def test_resuming_keeps_what_the_row_already_counts(
    project: Project, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 2)
    run = runs.start_run(project, rubric_judge(project), queue=False)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING, resumed=4, calls=7, done=1)
    with django_capture_on_commit_callbacks(execute=False):
        runs.resume_stale_runs()
    run.refresh_from_db()
    assert (run.resumed, run.calls, run.done, run.status) == (5, 7, 1, JudgeRun.Status.RUNNING)


@pytest.fixture
def broker_queue(settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The embedded broker's queue folder, in a folder of the test's own (the worker-start hook reads it)."""
    return use_broker_queue(settings, tmp_path, monkeypatch)


def queue_slice(run: JudgeRun) -> Path:
    """Queue the run's next slice as a live worker does at the end of a slice; the message file."""
    return publish(tasks.execute_judge_run, run.pk)


def test_a_second_worker_start_leaves_a_run_between_two_slices_of_a_live_worker_alone(
    project: Project, broker_queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 2)
    run = runs.start_run(project, rubric_judge(project), queue=False)
    # The first worker ran a slice (the run is marked running, its lock is free again) and queued the next one.
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING, done=1)
    queue_slice(run)
    assert not runs.is_run_executing(run.pk) and len(messages_in(broker_queue)) == 1

    with django_capture_on_commit_callbacks(execute=False) as queued:
        tasks.resume_judge_runs_on_worker_start()

    run.refresh_from_db()
    assert run.resumed == 0 and run.status == JudgeRun.Status.RUNNING
    assert queued == [] and len(messages_in(broker_queue)) == 1  # its one message, not a second


def test_a_worker_start_resumes_the_run_once_the_worker_holding_its_next_slice_is_gone(
    project: Project, broker_queue: Path, django_capture_on_commit_callbacks: Any
) -> None:
    add_samples(project, 2)
    judge = rubric_judge(project)
    run, other = (runs.start_run(project, judge, queue=False) for _ in range(2))
    JudgeRun.objects.filter(pk__in=[run.pk, other.pk]).update(status=JudgeRun.Status.RUNNING, done=1)
    taken = queue_slice(run)
    queue_slice(other)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        tasks.resume_judge_runs_on_worker_start()
    assert queued == [] and dict(JudgeRun.objects.values_list("pk", "resumed")) == {run.pk: 0, other.pk: 0}

    # A worker takes the run's message (kombu moves the file out of the queue folder) and is killed before its
    # execution holds the lock: the message is gone with it. The other run's slice still waits.
    taken.unlink()
    publish(tasks.execute_synthetic_set, run.pk)  # another task's message for the same number is not the run's
    with django_capture_on_commit_callbacks(execute=False) as queued:
        tasks.resume_judge_runs_on_worker_start()

    assert len(queued) == 1
    assert dict(JudgeRun.objects.values_list("pk", "resumed")) == {run.pk: 1, other.pk: 0}


# ----------------------------------------------------------------------------- the pages


def test_the_run_page_says_nothing_of_resumption_for_a_run_never_resumed(project: Project, admin_user: Any) -> None:
    run = finished_run(project, rubric_judge(project), resumed=0)
    html = run_page(login(admin_user), run)
    assert resumed_note(html) is None
    assert 'data-figure="resumed"' not in html and "Resumed" not in html


def test_a_resumed_run_s_page_says_its_calls_tokens_and_cost_miss_the_requests_in_flight(
    project: Project, admin_user: Any
) -> None:
    run = finished_run(project, rubric_judge(project), resumed=2)
    client = login(admin_user)
    html = run_page(client, run)
    note = resumed_note(html)
    assert note == (f"Resumed 2 times after its worker stopped mid-run: the calls in flight at each stop (about the "
                    f"judge's concurrency, {CONCURRENCY}, each with its retries) and answers received but not yet "
                    "saved are missing from calls, tokens and cost.")
    row = re.search(r'<tr data-figure="resumed">(.*?)</tr>', html, re.S)
    assert row is not None and text_of(row.group(1)).endswith(" 2")
    assert f"about the judge's concurrency, {CONCURRENCY}, each with its retries" in text_of(row.group(1))
    # The progress row the page polls carries it too.
    fragment = run_page(client, run, HTTP_HX_REQUEST="true")
    assert resumed_note(fragment) == note


def test_once_is_said_as_one_time(project: Project, admin_user: Any) -> None:
    run = finished_run(project, rubric_judge(project), resumed=1)
    note = resumed_note(run_page(login(admin_user), run))
    assert note is not None and note.startswith("Resumed 1 time after")


def test_the_judges_page_lists_a_resumed_run_with_its_note_beside_its_calls(project: Project, admin_user: Any) -> None:
    judge = rubric_judge(project)
    plain = finished_run(project, judge, resumed=0)
    resumed = finished_run(project, judge, resumed=3)
    html = login(admin_user).get(reverse("judging-judges", args=[project.slug])).content.decode()
    rows = {int(match.group(1)): match.group(2) for match in re.finditer(
        r'<div class="job run-progress" id="run-(\d+)"(.*?)</div>', html, re.S)}
    assert resumed_note(rows[plain.pk]) is None
    note = resumed_note(rows[resumed.pk])
    assert note is not None and note.startswith("Resumed 3 times") and f"concurrency, {CONCURRENCY}," in note
    assert "calls 4" in text_of(rows[resumed.pk])


def test_an_nli_run_says_it_was_resumed_without_speaking_of_requests(project: Project, admin_user: Any) -> None:
    judge = Judge.objects.create(project=project, name="nli", kind=Judge.Kind.NLI, nli_model_path="/nowhere")
    run = finished_run(project, judge, resumed=1)
    html = run_page(login(admin_user), run)
    assert resumed_note(html) == "Resumed 1 time after its worker stopped mid-run."
    assert 'data-figure="resumed"' not in html


# ----------------------------------------------------------------------------- the summary and the API


def test_the_judge_json_summary_carries_resumed(project: Project) -> None:
    judge = rubric_judge(project)
    assert runs.run_summary(finished_run(project, judge, resumed=2), with_judgements=False)["resumed"] == 2
    assert runs.run_summary(finished_run(project, judge, resumed=0))["resumed"] == 0


def test_the_api_gives_resumed_on_the_run_and_in_its_summary_as_its_schema_says(
    project: Project, admin_user: Any
) -> None:
    run = finished_run(project, rubric_judge(project), resumed=2)
    client = login(admin_user)
    detail = client.get(f"/api/judge-runs/{run.pk}/").json()
    assert detail["resumed"] == 2 and detail["summary"]["resumed"] == 2
    listed = client.get(f"/api/projects/{project.slug}/judge-runs/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [row["resumed"] for row in rows if row["id"] == run.pk] == [2]
    components = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["components"]
    for name in ("JudgeRun", "JudgeRunDetail", "RunSummary"):
        schema = components["schemas"][name]
        assert schema["properties"]["resumed"]["type"] == "integer", name
        assert "resumed" in schema["required"], name
