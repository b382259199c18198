"""What a judge run's figures add up to, worked out by hand: the tokens of the calls sent apart from those of
answers from the call cache, so that tokens x prices = cost; and a call's latency as its whole time, retries
and the waits between them included, with the number of requests it took."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Project, Sample
from judging.clients import Endpoint, chat, forget_request_modes
from judging.models import Judge, Judgement, JudgeRun
from judging.prompts import answer_schema
from judging.services import overview, runs
from tests.annotate.results_scene import tags
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, tag_of

pytestmark = pytest.mark.django_db

PRICE_IN, PRICE_OUT = 2.0, 10.0  # US$ per million tokens
WAIT_MS = 400  # what the scripted 429 asks the client to wait


def cost_of(tokens_in: int, tokens_out: int) -> float:
    """The price of tokens at this file's prices, worked out apart from the app's own code."""
    return (tokens_in * PRICE_IN + tokens_out * PRICE_OUT) / 1_000_000


def priced_judge(project: Project, base_url: str = "http://127.0.0.1:9/v1") -> Judge:
    return Judge.objects.create(project=project, name="priced", kind=Judge.Kind.RUBRIC, base_url=base_url,
                                model="test-model", price_input_per_mtok=PRICE_IN, price_output_per_mtok=PRICE_OUT)


def figure_cells(client: Client, run: JudgeRun) -> dict[str, str]:
    """The run page's figures table as {data-figure: the text of its value cell}."""
    html = client.get(reverse("judging-run", args=[run.project.slug, run.pk])).content.decode()
    cells = {}
    for row in html.split("<tr data-figure=")[1:]:
        name = row.split('"', 2)[1]
        cells[name] = row.split('<td class="num">', 1)[1].split("</td>", 1)[0].strip()
    return cells


@pytest.fixture(autouse=True)
def fresh_request_modes() -> Any:
    forget_request_modes()
    yield
    forget_request_modes()


# ----------------------------------------------------------------------------- tokens and cost


def test_tokens_of_calls_sent_and_of_cached_answers_are_apart_and_sent_tokens_times_prices_is_the_cost(
    project: Project, batch: Batch, admin_user: Any
) -> None:
    s0, s1, s2 = batch.samples.order_by("position")
    extra = Sample.objects.create(project=project, batch=batch, passage=s0.passage, position=3, summary="x")
    judge = priced_judge(project)
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE, total=4, done=4)
    # Sent: an answer (1000 in, 200 out), a parse error (500 in, 100 out: answered, so paid), an endpoint error.
    Judgement.objects.create(run=run, sample=s0, status="ok", score=4, input_tokens=1000, output_tokens=200,
                             cost=cost_of(1000, 200), attempts=1, latency_seconds=1.0)
    Judgement.objects.create(run=run, sample=s1, status="parse_error", input_tokens=500, output_tokens=100,
                             cost=cost_of(500, 100), attempts=1, latency_seconds=2.0)
    Judgement.objects.create(run=run, sample=s2, status="error", error="HTTP 500 after 5 attempts", attempts=5)
    # From the cache: the tokens of the call that paid for it earlier, cost 0.
    Judgement.objects.create(run=run, sample=extra, status="ok", score=5, input_tokens=1000, output_tokens=200,
                             cost=0.0, cached=True, latency_seconds=1.0)

    figures = overview.run_figures(run)
    assert (figures["sent_input_tokens"], figures["sent_output_tokens"]) == (1500, 300)
    assert (figures["cached_input_tokens"], figures["cached_output_tokens"]) == (1000, 200)
    assert figures["cost"] == pytest.approx(0.006)  # 1500 x $2/M + 300 x $10/M
    assert figures["cost"] == pytest.approx(cost_of(figures["sent_input_tokens"], figures["sent_output_tokens"]))
    assert figures["mean_latency"] == pytest.approx(1.5)  # the two calls that answered; the cache hit took none
    assert figures["retried"] == 1  # the endpoint error took five requests

    cells = figure_cells(login(admin_user), run)
    assert cells["sent_tokens"] == "1500 / 300"
    assert cells["cached_tokens"] == ('1000 / 200 <span class="small" data-role="cached-answers">saved by 1 answer '
                                      'from the cache</span>')
    assert cells["cost"] == "0.0060"
    assert cells["prices"] == "$2.00 in, $10.00 out"  # judging.costs.prices_text, as every page writes them
    assert cells["retried"] == "1"


def test_a_fully_cached_run_sent_no_token_and_cost_nothing(project: Project, batch: Batch, admin_user: Any) -> None:
    s0, s1, _ = batch.samples.order_by("position")
    run = JudgeRun.objects.create(project=project, judge=priced_judge(project), status=JudgeRun.Status.DONE)
    for sample in (s0, s1):
        Judgement.objects.create(run=run, sample=sample, status="ok", score=5, input_tokens=2260,
                                 output_tokens=91, cost=0.0, cached=True, latency_seconds=0.8)
    figures = overview.run_figures(run)
    assert (figures["sent_input_tokens"], figures["sent_output_tokens"], figures["cost"]) == (0, 0, 0.0)
    assert (figures["cached_input_tokens"], figures["cached_output_tokens"]) == (4520, 182)
    assert figures["mean_latency"] is None
    cells = figure_cells(login(admin_user), run)
    assert (cells["sent_tokens"], cells["cost"]) == ("0 / 0", "0.0000")
    assert cells["cached_tokens"] == ('4520 / 182 <span class="small" data-role="cached-answers">saved by 2 answers '
                                      'from the cache</span>')


def test_executed_runs_price_exactly_the_tokens_they_sent(project: Project, admin_user: Any) -> None:
    samples = add_samples(project, 3)
    # s1 asks exactly what s0 asks: one call answers both, the second judgement is served from that answer.
    Sample.objects.filter(pk=samples[1].pk).update(summary=samples[0].summary, passage=samples[0].passage)

    def script(body: dict[str, Any], attempt: int) -> Reply:
        return Reply(content=json.dumps({"reasoning": "checked", "score": 4}), prompt_tokens=1000,
                     completion_tokens=200)

    with LoopbackLLM(script) as server:
        judge = priced_judge(project, server.base_url)
        first = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
        second = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
    assert server.chat_calls == 2

    sent = overview.run_figures(first)
    assert (sent["sent_input_tokens"], sent["sent_output_tokens"]) == (2000, 400)
    assert (sent["cached_input_tokens"], sent["cached_output_tokens"]) == (1000, 200)
    assert sent["cost"] == pytest.approx(cost_of(2000, 400))  # $0.008: two calls, not three

    cached = overview.run_figures(second)
    assert (cached["sent_input_tokens"], cached["sent_output_tokens"], cached["cost"]) == (0, 0, 0.0)
    assert (cached["cached_input_tokens"], cached["cached_output_tokens"]) == (3000, 600)
    assert figure_cells(login(admin_user), first)["sent_tokens"] == "2000 / 400"


# ----------------------------------------------------------------------------- latency and retries


def rate_limited_once(body: dict[str, Any], attempt: int) -> Reply:
    """The first request about sample s0 gets a 429 asking for a WAIT_MS wait; everything else is answered."""
    if attempt == 0 and tag_of(user_text(body)) in (None, "s0"):
        return Reply(status=429, headers={"retry-after-ms": str(WAIT_MS)})
    return Reply()


def test_a_retried_call_s_latency_holds_the_retry_wait_and_counts_its_requests() -> None:
    with LoopbackLLM(script=rate_limited_once) as server:
        endpoint = Endpoint(base_url=server.base_url, model="test-model", timeout_seconds=5.0, max_retries=2)
        answer = chat(endpoint, [{"role": "user", "content": "Rate this."}], json_schema=answer_schema(True))
    assert answer.attempts == 2
    # The client waited what the 429 asked before its second request: that wait is part of the call.
    assert answer.latency_seconds >= WAIT_MS / 1000


def test_a_run_records_the_whole_time_and_the_requests_of_a_retried_call(
    project: Project, admin_user: Any
) -> None:
    add_samples(project, 2)
    with LoopbackLLM(script=rate_limited_once) as server:
        run = runs.execute_run(runs.start_run(project, priced_judge(project, server.base_url), queue=False).pk)
    by_tag = {judgement.sample.external_id: judgement for judgement in run.judgements.select_related("sample")}
    retried, plain = by_tag["s0"], by_tag["s1"]
    assert (retried.status, retried.attempts, plain.attempts) == ("ok", 2, 1)
    assert retried.latency_seconds >= WAIT_MS / 1000
    assert overview.run_figures(run)["retried"] == 1

    page = tags(login(admin_user).get(reverse("judging-run", args=[project.slug, run.pk])))
    shown = {row["data-judgement"]: row for row in page.find("tr") if "data-judgement" in row}
    assert set(shown) == {str(retried.pk), str(plain.pk)}
    html = login(admin_user).get(reverse("judging-run", args=[project.slug, run.pk])).content.decode()
    row = html.split(f'data-judgement="{retried.pk}"', 1)[1].split("</tr>", 1)[0]
    assert '<span class="muted small" data-role="attempts">(2)</span>' in row
    plain_row = html.split(f'data-judgement="{plain.pk}"', 1)[1].split("</tr>", 1)[0]
    assert 'data-role="attempts"' not in plain_row
    assert "retries and their waits included" in html
