"""An endpoint outage mid-run stops the run, failed "Endpoint unreachable", instead of failing every sample left.

Before, a rubric run whose endpoint went down failed all its remaining samples within seconds (32 samples x 3
attempts in 15 s) and ended "Done", every sample left an endpoint error. Now OUTAGE_FAILURES calls in a row that fail
because the endpoint did (no connection, a timeout, a 5xx after the retries) stop it: the samples it never sent stay
unjudged (no error judgement), and a new run of the judge sends them, and the failed ones, while the answers it had
come from the call cache. A failure of one request (a 400, a rate limit) is no outage and never stops a run.
"""

from __future__ import annotations

import threading

import pytest

from annotate.models import Project
from judging.clients import Endpoint, EndpointError, chat
from judging.models import Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from judging.services.runs.rubric_calls import OUTAGE_FAILURES
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, closed_port_url, tag_of

pytestmark = pytest.mark.django_db

SAMPLES = 32
ANSWERED_BEFORE = 4  # the endpoint answers the first four samples, then goes down


class Outage:
    """A script: the first ANSWERED_BEFORE samples answered, every request after that a 503, until ``back``."""

    def __init__(self, status: int = 503) -> None:
        self.status = status
        self.back = False
        self.answered: set[str] = set()
        self._lock = threading.Lock()

    def __call__(self, body: dict, attempt: int) -> Reply:
        tag = tag_of(user_text(body)) or ""
        with self._lock:
            if self.back or tag in self.answered or len(self.answered) < ANSWERED_BEFORE:
                self.answered.add(tag)
                return Reply(content='{"reasoning": "Supported.", "score": 5}')
        return Reply(status=self.status, error_body={"error": {"message": "upstream is down", "type": "server_error"}})


def judge_on(project: Project, base_url: str, **settings: object) -> Judge:
    return create_judge(project, name="loop", kind="rubric", base_url=base_url, model="test-model",
                        **{"max_retries": 0, "concurrency": 1, **settings})


def run_of(project: Project, judge: Judge) -> JudgeRun:
    run, started = runs.start_or_reuse_run(project, judge)
    assert started
    return runs.execute_run(run.pk)


def test_an_outage_stops_the_run_leaving_the_samples_it_did_not_send_unjudged(project: Project) -> None:
    add_samples(project, SAMPLES)
    outage = Outage()
    with LoopbackLLM(outage) as server:
        judge = judge_on(project, server.base_url)
        run = run_of(project, judge)
        sent = server.chat_calls

        assert run.status == JudgeRun.Status.FAILED and not run.cancelled
        assert run.error.startswith(f"Endpoint unreachable: {OUTAGE_FAILURES} calls in a row to {server.base_url} "
                                    "failed after their retries")
        assert "HTTP 503" in run.error  # the last failure, as it came
        # It stopped at the streak: the call already on its way then (concurrency 1: one) was waited for and kept;
        # the samples after it were never asked and have no judgement, not an error each.
        failed = run.done - ANSWERED_BEFORE
        assert OUTAGE_FAILURES <= failed <= OUTAGE_FAILURES + judge.concurrency
        assert sent == run.done and run.total == SAMPLES and run.scored == ANSWERED_BEFORE
        assert f"{SAMPLES - run.done} of {SAMPLES} samples were not sent and stay unjudged" in run.error
        statuses = list(Judgement.objects.filter(run=run).values_list("status", flat=True))
        assert sorted(statuses) == ["error"] * failed + ["ok"] * ANSWERED_BEFORE

        # The endpoint is back: a new run of the judge sends only the samples without an answer.
        outage.back = True
        again = run_of(project, judge)
        assert again.status == JudgeRun.Status.DONE and again.scored == SAMPLES
        assert server.chat_calls - sent == SAMPLES - ANSWERED_BEFORE == again.calls
        assert again.cached == ANSWERED_BEFORE


def test_a_refused_connection_stops_the_run_too(project: Project) -> None:
    add_samples(project, SAMPLES)
    judge = judge_on(project, closed_port_url())
    run, _ = runs.start_or_reuse_run(project, judge)
    # endpoint_checked: as if the endpoint had answered its check and gone away just after.
    run = runs.execute_run(run.pk, endpoint_checked=True)
    assert run.status == JudgeRun.Status.FAILED and run.error.startswith("Endpoint unreachable: ")
    assert "Could not connect" in run.error
    assert OUTAGE_FAILURES <= run.done <= OUTAGE_FAILURES + judge.concurrency < SAMPLES
    assert Judgement.objects.filter(run=run, status="error").count() == run.done


@pytest.mark.parametrize("status", [400, 429])
def test_failures_of_the_requests_themselves_do_not_stop_a_run(project: Project, status: int) -> None:
    add_samples(project, OUTAGE_FAILURES + 4)
    with LoopbackLLM(lambda body, attempt: Reply(status=status, headers={"Retry-After": "0"})) as server:
        run = run_of(project, judge_on(project, server.base_url))
    assert run.status == JudgeRun.Status.DONE and run.all_failed  # "Done: 12 of 12 failed", as before
    assert run.failed == OUTAGE_FAILURES + 4


def test_an_answer_between_failures_breaks_the_streak(project: Project) -> None:
    add_samples(project, 3 * OUTAGE_FAILURES)

    def every_few_answered(body: dict, attempt: int) -> Reply:
        number = int((tag_of(user_text(body)) or "s0")[1:])
        if number % (OUTAGE_FAILURES - 1) == 0:
            return Reply()
        return Reply(status=502)

    with LoopbackLLM(every_few_answered) as server:
        run = run_of(project, judge_on(project, server.base_url))
    assert run.status == JudgeRun.Status.DONE and run.done == 3 * OUTAGE_FAILURES


def test_which_endpoint_errors_count_as_the_endpoint_being_down() -> None:
    messages = [{"role": "user", "content": "hi"}]
    with pytest.raises(EndpointError) as refused:
        chat(Endpoint(base_url=closed_port_url(), model="test-model", max_retries=0), messages)
    assert refused.value.unreachable
    for status, down in ((500, True), (503, True), (400, False), (429, False)):
        with LoopbackLLM(lambda body, attempt, status=status: Reply(status=status)) as server:
            with pytest.raises(EndpointError) as failed:
                chat(Endpoint(base_url=server.base_url, model="test-model", max_retries=0), messages)
        assert failed.value.unreachable is down, status
