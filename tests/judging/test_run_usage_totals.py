"""A run's token and cost totals are the same on its page, in the API's run summary and in `judge --json`, worked
out here by hand for small runs against a loopback endpoint: tokens and cost of the calls sent, the tokens the call
cache saved apart (with how many answers), calls and cached answers without token usage counted, and null, with its
reason, where a figure is unknown (a judge without prices, an NLI judge, no usage reported)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Project
from judging.models import Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import create_judge
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, tag_of
from tests.judging.test_run_accounting import figure_cells

pytestmark = pytest.mark.django_db

PRICE_IN, PRICE_OUT = 2.0, 10.0  # US$ per million tokens
# What the endpoint reports for each sample: (prompt tokens, completion tokens), None for no usage; "error" a 500.
USAGE: dict[str, tuple[int, int] | None | str] = {
    "s0": (1000, 200),
    "s1": None,
    "s2": (800, 150),
    "s3": None,
    "s4": (500, 50),
    "s5": "error",
}
TOTALS = ("input_tokens", "output_tokens", "cost", "calls_with_usage", "calls_without_usage",
          "cached_input_tokens_saved", "cached_output_tokens_saved", "cached_answers_with_usage",
          "cached_answers_without_usage", "reasons")
UNPRICED = ("The judge had no prices when its calls were sent (US$ per million tokens, set on the judges page), so "
            "their cost is not known; the tokens are.")


def scripted_usage(body: dict[str, Any], attempt: int) -> Reply:
    usage = USAGE[tag_of(user_text(body)) or ""]
    if usage == "error":
        return Reply(status=500)
    tokens = usage if isinstance(usage, tuple) else (None, None)
    return Reply(content=json.dumps({"reasoning": "checked", "score": 4}), prompt_tokens=tokens[0],
                 completion_tokens=tokens[1])


def loop_judge(project: Project, server: LoopbackLLM, *, priced: bool = True) -> Judge:
    prices = {"price_input_per_mtok": PRICE_IN, "price_output_per_mtok": PRICE_OUT} if priced else {}
    return create_judge(project, name="loop", kind="rubric", base_url=server.base_url, model="test-model",
                        max_retries=0, **prices)


def api_summary(client: Any, run: JudgeRun) -> dict[str, Any]:
    return client.get(f"/api/judge-runs/{run.pk}/").json()["summary"]


def judge_json(project: Project, server: LoopbackLLM) -> dict[str, Any]:
    out = io.StringIO()
    call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                 "--json", stdout=out)
    return json.loads(out.getvalue())


def totals_of(summary: dict[str, Any]) -> dict[str, Any]:
    return {name: summary[name] for name in TOTALS}


def test_a_run_s_totals_are_worked_out_over_the_calls_sent_with_the_cache_s_tokens_apart(
    project: Project, admin_user: Any
) -> None:
    # The first run pays s0 (1000 in, 200 out) and s1 (no usage); the second, with four more samples, reuses both
    # answers from the cache and sends s2 (800/150), s3 (no usage), s4 (500/50) and s5 (an endpoint error).
    add_samples(project, 2)
    with LoopbackLLM(scripted_usage) as server:
        loop_judge(project, server)
        first = judge_json(project, server)  # the command reuses the priced judge of this endpoint and model
        add_samples(project, 4, batch_name="later", first=2)
        second = judge_json(project, server)
        assert server.chat_calls == 6
    assert (second["cached"], second["scored"], second["failed"]) == (2, 5, 1)  # s5 failed

    expected_first = {
        "input_tokens": 1000, "output_tokens": 200, "cost": pytest.approx((1000 * 2.0 + 200 * 10.0) / 1e6),  # 0.004
        "calls_with_usage": 1, "calls_without_usage": 1,
        "cached_input_tokens_saved": 0, "cached_output_tokens_saved": 0,  # no answer from the cache: a true 0
        "cached_answers_with_usage": 0, "cached_answers_without_usage": 0, "reasons": {},
    }
    expected_second = {
        "input_tokens": 800 + 500, "output_tokens": 150 + 50,
        "cost": pytest.approx((1300 * 2.0 + 200 * 10.0) / 1e6),  # $0.0046: s2 and s4; s3 reported nothing
        "calls_with_usage": 2, "calls_without_usage": 1,  # s5 got no answer: not a call without usage
        "cached_input_tokens_saved": 1000, "cached_output_tokens_saved": 200,  # s0's, paid by the first run
        "cached_answers_with_usage": 1, "cached_answers_without_usage": 1,  # s1 came without usage
        "reasons": {},
    }
    assert totals_of(first) == expected_first
    assert totals_of(second) == expected_second

    client = login(admin_user)
    (first_run, second_run) = JudgeRun.objects.order_by("pk")
    assert totals_of(api_summary(client, first_run)) == expected_first
    assert totals_of(api_summary(client, second_run)) == expected_second
    # The page shows the same figures.
    cells = figure_cells(client, second_run)
    assert cells["cost"].startswith("0.0046 ")
    assert cells["sent_tokens"].startswith("1300 / 200 ")
    assert "for 2 of 3 calls answered; 1 reported no usage" in cells["sent_tokens"]
    assert cells["cached_tokens"] == ('1000 / 200 <span class="small" data-role="cached-answers">saved by 1 answer '
                                      'from the cache; 1 more came without token usage</span>')


def test_a_judge_without_prices_has_an_unknown_cost_not_zero_and_says_why(
    project: Project, admin_user: Any
) -> None:
    add_samples(project, 1)
    with LoopbackLLM(scripted_usage) as server:
        loop_judge(project, server, priced=False)
        sent = judge_json(project, server)
        again = judge_json(project, server)  # answered from the cache: nothing sent, nothing spent
        assert server.chat_calls == 1
    assert totals_of(sent) == {
        "input_tokens": 1000, "output_tokens": 200, "cost": None, "calls_with_usage": 1, "calls_without_usage": 0,
        "cached_input_tokens_saved": 0, "cached_output_tokens_saved": 0, "cached_answers_with_usage": 0,
        "cached_answers_without_usage": 0, "reasons": {"cost": UNPRICED},
    }
    assert totals_of(again) == {
        "input_tokens": 0, "output_tokens": 0, "cost": 0.0, "calls_with_usage": 0, "calls_without_usage": 0,
        "cached_input_tokens_saved": 1000, "cached_output_tokens_saved": 200, "cached_answers_with_usage": 1,
        "cached_answers_without_usage": 0, "reasons": {},
    }
    client = login(admin_user)
    run = JudgeRun.objects.order_by("pk").first()
    assert totals_of(api_summary(client, run)) == totals_of(sent)
    assert figure_cells(client, run)["cost"] == ('— <span class="small" data-role="unpriced">not known: the judge '
                                                 'had no prices when its calls were sent</span>')
    # The judgement row does not pretend to know either (test_unpriced_judgement_cost.py: every surface).
    judgement = run.judgements.get()
    assert (judgement.cost, judgement.run_cost, judgement.cost_unpriced) == (None, None, True)


def test_unknown_tokens_are_null_with_their_reason(project: Project, admin_user: Any) -> None:
    add_samples(project, 2)
    with LoopbackLLM(lambda body, attempt: Reply(prompt_tokens=None, completion_tokens=None)) as server:
        loop_judge(project, server)
        no_usage = judge_json(project, server)
    with LoopbackLLM(lambda body, attempt: Reply(status=500)) as down:
        create_judge(project, name="down", kind="rubric", base_url=down.base_url, model="test-model", max_retries=0)
        no_answer = judge_json(project, down)
    assert (no_usage["input_tokens"], no_usage["output_tokens"], no_usage["cost"]) == (None, None, None)
    assert (no_usage["calls_with_usage"], no_usage["calls_without_usage"]) == (0, 2)
    assert set(no_usage["reasons"]) == {"input_tokens", "output_tokens", "cost"}
    assert no_usage["reasons"]["cost"].startswith("No call sent reported its token usage")
    assert (no_answer["input_tokens"], no_answer["cost"], no_answer["calls_without_usage"]) == (None, None, 0)
    assert no_answer["reasons"]["input_tokens"].startswith("No call sent got an answer")


def test_an_nli_run_has_no_tokens_or_cost_and_a_run_not_started_has_none_yet(
    project: Project, admin_user: Any
) -> None:
    (sample,) = add_samples(project, 1)
    nli = Judge.objects.create(project=project, name="nli", kind=Judge.Kind.NLI, nli_model_path="/models/hhem")
    run = JudgeRun.objects.create(project=project, judge=nli, status=JudgeRun.Status.DONE, total=1, done=1,
                                  scored=1)
    Judgement.objects.create(run=run, sample=sample, status="ok", probability=0.9, latency_seconds=0.2, attempts=1)
    client = login(admin_user)
    summary = api_summary(client, run)
    assert {name: summary[name] for name in TOTALS if name != "reasons"} == dict.fromkeys(TOTALS[:-1])
    assert set(summary["reasons"]) == set(TOTALS[:-1])
    assert summary["reasons"]["cost"] == "An NLI judge runs a local model: it sends no tokens and has no price."

    rubric = Judge.objects.create(project=project, name="r", kind=Judge.Kind.RUBRIC, base_url="http://x/v1",
                                  model="m", price_input_per_mtok=PRICE_IN, price_output_per_mtok=PRICE_OUT)
    queued = JudgeRun.objects.create(project=project, judge=rubric, total=1)
    waiting = api_summary(client, queued)
    assert (waiting["input_tokens"], waiting["cost"], waiting["cached_input_tokens_saved"]) == (None, None, None)
    assert waiting["reasons"]["cost"] == "Nothing is judged yet."
    assert runs.run_summary(queued, with_judgements=False)["reasons"] == waiting["reasons"]
