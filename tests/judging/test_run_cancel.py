"""Cancelling a judge run (project admins), on its line and through the API: the way out of a run no worker picks
up. Before, such a run said "Queued" for good, and a retried start answered that same run, so no run of the judge
could start until a worker did.

A cancelled run is failed, "Cancelled by <user> at <time>."; a worker that picks it up later does nothing, one
executing it stops at its next progress write, sending no new call, and keeps the judgements it stored, the
answers of the calls in flight then included (their answers are in the call cache, so the next run reuses them); a
new run of the judge can start. Runs stay queued here: the tests run in a
transaction, so the on-commit send never fires.
"""

from __future__ import annotations

import re
import time
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Membership, Project
from annotate.services.jobs import CancelRefused
from judging.models import CallCache, Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from judging.services.runs import results
from judging.services.runs.summary import run_summary
from tests.conftest import login, make_user
from tests.judging.llm_server import InFlight, LoopbackLLM
from tests.judging.run_factories import add_samples, closed_port_url

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
CANCELLED = re.compile(r"Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.")
NOTICE = re.compile(r'<p class="notice warn" data-role="no-worker">(.*?)</p>', re.S)
CANCEL_FORM = 'data-role="cancel-run-form"'


def rubric_judge(project: Project, base_url: str) -> Judge:
    return create_judge(project, name="loop", kind="rubric", base_url=base_url, model="test-model", max_retries=0,
                        concurrency=1)


def queued_run(project: Project, judge: Judge, *, minutes_ago: int = 0) -> JudgeRun:
    run, started = runs.start_or_reuse_run(project, judge)
    assert started
    JudgeRun.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    run.refresh_from_db()
    return run


def member(project: Project, name: str, role: str) -> Any:
    user = make_user(name)
    Membership.objects.create(project=project, user=user, role=role)
    return user


def notice_in(html: str) -> str | None:
    found = NOTICE.search(html)
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split()) if found else None


def run_url(run: JudgeRun, suffix: str = "") -> str:
    return f"/projects/{run.project.slug}/judges/runs/{run.pk}/{suffix}"


def api_cancel_url(run: JudgeRun) -> str:
    return f"/api/projects/{run.project.slug}/judge-runs/{run.pk}/cancel/"


# ----------------------------------------------------------------------------- the service


def test_a_queued_run_cancelled_is_failed_by_whom_and_a_worker_picking_it_up_later_does_nothing(
    project: Project, admin_user: Any
) -> None:
    add_samples(project, 3)
    # Nothing listens there: a worker executing the run would fail it with a connection error.
    judge = rubric_judge(project, closed_port_url())
    run = queued_run(project, judge)
    runs.cancel_run(run, admin_user)
    assert run.status == JudgeRun.Status.FAILED and CANCELLED.fullmatch(run.error)
    run.refresh_from_db()
    assert (run.status, run.cancelled_by, run.status_label) == (JudgeRun.Status.FAILED, admin_user, "Cancelled")
    assert run.cancelled_at == run.finished_at is not None
    after = runs.execute_run(run.pk)  # the worker that starts at last
    assert after.status == JudgeRun.Status.FAILED and CANCELLED.fullmatch(after.error)
    assert after.started_at is None and not Judgement.objects.filter(run=run).exists()
    # A new run of the same judge starts (a retried start answered the queued run before).
    again, started = runs.start_or_reuse_run(project, judge)
    assert started and again.pk != run.pk and again.status == JudgeRun.Status.QUEUED


def test_a_running_run_cancelled_stops_at_its_next_progress_write_and_keeps_what_it_stored(
    project: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 6)
    monkeypatch.setattr(results, "FLUSH_RESULTS", 1)  # every answer is a progress write
    flush = results._ResultWriter.flush
    cancelled = []

    def cancel_before_first_write(writer: results._ResultWriter) -> None:
        if writer.judgements and not cancelled:  # the admin cancels while the run executes
            cancelled.append(runs.cancel_run(JudgeRun.objects.get(pk=writer.run.pk), admin_user))
        flush(writer)

    with LoopbackLLM() as server:
        judge = rubric_judge(project, server.base_url)
        run = queued_run(project, judge)
        monkeypatch.setattr(results._ResultWriter, "flush", cancel_before_first_write)
        stopped = runs.execute_run(run.pk)
        monkeypatch.setattr(results._ResultWriter, "flush", flush)
        assert cancelled
        assert stopped.status == JudgeRun.Status.FAILED and CANCELLED.fullmatch(stopped.error)
        assert stopped.cancelled_by == admin_user and stopped.status_label == "Cancelled"
        kept = list(Judgement.objects.filter(run=run).select_related("sample"))
        # It stopped: what it wrote stays, with the answers of the calls already sent when it was cancelled (on a
        # busy machine all six may be in flight by then; the in-flight test below holds the endpoint so that some
        # are not), and every call the endpoint received is one of them.
        assert 1 <= len(kept) <= 6 and stopped.done == len(kept) == len(server.requests)
        assert CallCache.objects.count() >= len(kept)
        assert not JudgeRun.objects.get(pk=run.pk).flagged
        # A new run of the judge starts and answers the kept samples from the call cache, paying for the rest only.
        sent = len(server.requests)
        again, started = runs.start_or_reuse_run(project, judge)
        assert started
        done = runs.execute_run(again.pk)
        assert done.status == JudgeRun.Status.DONE and done.done == 6
        reused = set(done.judgements.filter(cached=True).values_list("sample__external_id", flat=True))
        assert {judgement.sample.external_id for judgement in kept} <= reused
        assert len(server.requests) - sent <= 6 - len(kept)


def test_a_run_cancelled_with_calls_in_flight_keeps_their_answers_and_sends_no_new_call(
    project: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, the calls in flight at the cancel reached the endpoint (paid for) but neither the run nor the call
    # cache: the run said fewer calls than the endpoint received, and the next run paid for them again.
    add_samples(project, 20)
    monkeypatch.setattr(results, "FLUSH_RESULTS", 1)  # every answer is a progress write
    flush = results._ResultWriter.flush
    held = InFlight(0.4)  # every answer takes 0.4 s: four calls in flight at once
    cancelled = []

    def cancel_with_calls_in_flight(writer: results._ResultWriter) -> None:
        if writer.judgements and not cancelled:
            # The first answers are in and the next calls already sent (the pool takes them as a call ends).
            deadline = time.monotonic() + 5
            while held.now < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            cancelled.append(runs.cancel_run(JudgeRun.objects.get(pk=writer.run.pk), admin_user))
        flush(writer)

    with LoopbackLLM(held) as server:
        judge = Judge.objects.create(project=project, name="slow", kind=Judge.Kind.RUBRIC, base_url=server.base_url,
                                     model="test-model", max_retries=0, concurrency=4, price_input_per_mtok=2.0,
                                     price_output_per_mtok=10.0)
        run = queued_run(project, judge)
        monkeypatch.setattr(results._ResultWriter, "flush", cancel_with_calls_in_flight)
        stopped = runs.execute_run(run.pk)
        monkeypatch.setattr(results._ResultWriter, "flush", flush)
        assert cancelled and stopped.status_label == "Cancelled" and CANCELLED.fullmatch(stopped.error)
        deadline = time.monotonic() + 5  # a call the old code left behind ends at the endpoint after the run stopped
        while held.now and time.monotonic() < deadline:
            time.sleep(0.01)
        sent = server.chat_calls
        kept = list(Judgement.objects.filter(run=run, status=Judgement.Status.OK, cached=False, attempts=1))
        # It stopped sending: the calls waiting were never sent.
        assert 3 <= sent < 20
        # Every call the endpoint received is in the run: its calls, a judgement with the answer, its cost.
        assert stopped.calls == sent == len(kept) == stopped.done == stopped.scored
        assert CallCache.objects.count() == sent
        one_call = judge.cost_of(120, 30)
        assert one_call and run_summary(stopped, with_judgements=False)["cost"] == pytest.approx(sent * one_call)
        # The next run pays for none of them: only the samples never asked are sent.
        again, started = runs.start_or_reuse_run(project, judge)
        assert started
        done = runs.execute_run(again.pk)
        assert done.status == JudgeRun.Status.DONE and done.done == 20
        assert server.chat_calls - sent == done.calls == 20 - sent and done.cached == sent
        reused = set(done.judgements.filter(cached=True).values_list("sample_id", flat=True))
        assert reused == {judgement.sample_id for judgement in kept}


@pytest.mark.parametrize("ending", ["done", "failed", "cancelled", "imported"])
def test_a_run_that_has_ended_is_not_cancelled_and_the_refusal_says_how_it_ended(
    project: Project, admin_user: Any, ending: str
) -> None:
    add_samples(project, 2)
    run = queued_run(project, rubric_judge(project, closed_port_url()))
    if ending == "done":
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE, done=2, scored=2)
        words = f"Run {run.pk} is done (2 of 2 scored); there is nothing to cancel and nothing was changed."
    elif ending == "failed":
        JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.FAILED, error="The model is not served.")
        words = f"Run {run.pk} has already failed (The model is not served); nothing was changed."
    elif ending == "cancelled":
        runs.cancel_run(run, admin_user)
        words = f"Run {run.pk} was already cancelled by adam at "
    else:  # imported outputs never run, even if the row says queued
        JudgeRun.objects.filter(pk=run.pk).update(scope=JudgeRun.Scope.IMPORTED)
        words = f"Run {run.pk} holds imported outputs, which never run: there is nothing to cancel"
    before = JudgeRun.objects.filter(pk=run.pk).values().get()
    with pytest.raises(CancelRefused) as refusal:
        runs.cancel_run(JudgeRun.objects.get(pk=run.pk), admin_user)
    assert str(refusal.value).startswith(words)
    assert JudgeRun.objects.filter(pk=run.pk).values().get() == before


# ----------------------------------------------------------------------------- the pages


def test_an_admin_gets_the_runs_cancel_beside_the_no_worker_notice_and_others_get_no_page(
    project: Project, admin_user: Any, alice: Any, charlie: Any
) -> None:
    add_samples(project, 2)
    run = queued_run(project, rubric_judge(project, closed_port_url()), minutes_ago=5)
    admin = login(admin_user)
    for html in (admin.get(run_url(run)).content.decode(), admin.get(run_url(run), **HTMX).content.decode(),
                 admin.get("/projects/demo/judges/").content.decode()):
        line = html[html.index(f'id="run-{run.pk}"'):]
        line = line[:line.index("</div>")]
        assert notice_in(line).endswith("Or cancel the job.")
        assert CANCEL_FORM in line and f'action="{run_url(run, "cancel/")}"' in line
    auditor = member(project, "audrey", Membership.Role.AUDITOR)
    for user, refused in ((alice, 403), (auditor, 403), (charlie, 404)):
        client = login(user)
        assert client.get(run_url(run)).status_code == refused
        assert client.post(run_url(run, "cancel/")).status_code == refused
    assert JudgeRun.objects.get(pk=run.pk).status == JudgeRun.Status.QUEUED


def test_the_admins_cancel_reloads_the_page_which_then_says_who_cancelled_and_offers_no_cancel(
    project: Project, admin_user: Any
) -> None:
    add_samples(project, 2)
    run = queued_run(project, rubric_judge(project, closed_port_url()), minutes_ago=5)
    admin = login(admin_user)
    answer = admin.post(run_url(run, "cancel/"), **HTMX)
    assert answer.status_code == 200 and answer["HX-Refresh"] == "true"
    page = admin.get(run_url(run)).content.decode()
    assert f"Run {run.pk} is cancelled" in page
    assert re.search(r'data-role="run-cancelled">Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.<', page)
    assert CANCEL_FORM not in page and notice_in(page) is None
    # Again (a second tab): refused with how it ended, back to the run's page.
    again = admin.post(run_url(run, "cancel/"))
    assert again.status_code == 302 and again["Location"] == run_url(run)
    assert f"Not cancelled: Run {run.pk} was already cancelled by adam" in admin.get(run_url(run)).content.decode()


# ----------------------------------------------------------------------------- the API


def test_the_api_cancels_a_queued_run_200_then_409_and_refuses_other_roles(
    project: Project, admin_user: Any, alice: Any, charlie: Any
) -> None:
    add_samples(project, 2)
    judge = rubric_judge(project, closed_port_url())
    run = queued_run(project, judge)
    auditor = member(project, "audrey", Membership.Role.AUDITOR)
    for user, refused in ((alice, 403), (auditor, 403), (charlie, 404)):
        assert login(user).post(api_cancel_url(run)).status_code == refused
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=admin_user, role=Membership.Role.ADMIN)
    admin = login(admin_user)
    assert admin.post(f"/api/projects/other/judge-runs/{run.pk}/cancel/").status_code == 404
    assert JudgeRun.objects.get(pk=run.pk).status == JudgeRun.Status.QUEUED
    answer = admin.post(api_cancel_url(run))
    assert answer.status_code == 200
    body = answer.json()
    assert (body["id"], body["status"], body["status_label"]) == (run.pk, "failed", "Cancelled")
    assert CANCELLED.fullmatch(body["error"]) and body["finished_at"]
    assert (body["cancelled_by"], body["cancelled_at"]) == ("adam", body["finished_at"])
    second = admin.post(api_cancel_url(run))
    assert second.status_code == 409 and "was already cancelled by adam" in second.json()["detail"]
    # The retried start now starts a new run instead of answering the cancelled one.
    start = admin.post("/api/projects/demo/judge-runs/", {"judge": judge.pk}, content_type="application/json")
    assert start.status_code == 201 and start.json()["existing"] is False


def test_the_schema_documents_the_runs_cancel(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/{slug}/judge-runs/{id}/cancel/"]["post"]
    assert {"200", "403", "409"} <= set(operation["responses"])
    assert "already ended" in operation["responses"]["409"]["description"]


def test_an_nli_runs_page_names_its_kind_once(admin_user: Any) -> None:
    # It read "NLI judge with sliding windows · NLI judge with sliding windows": the kind, then the mode, which for
    # an NLI judge is the kind again (found by the judges walk).
    project = Project.objects.create(name="Demo", slug="demo")
    Membership.objects.create(project=project, user=admin_user, role="admin")
    judge = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path="/srv/models/hhem")
    run = JudgeRun.objects.create(project=project, judge=judge)
    page = login(admin_user).get(run_url(run)).content.decode()
    assert page.count("NLI judge with sliding windows") == 1
