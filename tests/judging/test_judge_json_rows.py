"""`manage.py judge --json` lists each judgement as the JSONL export's row of it (the same function builds both): the
same keys and values, the figures of what the run spent included. Before, its rows had `error` "" where the export
has null, and no latency, tokens or cost at all.

Against a loopback OpenAI-style server with prices of 2 and 10 US$ per million input and output tokens, by hand:
s0 answers a score with 1000 + 200 tokens, 1000 x 2 / 1e6 + 200 x 10 / 1e6 = 0.004 US$; s1 an unreadable answer
with 800 + 50 tokens, 0.0016 + 0.0005 = 0.0021 US$ (paid like any answer); s2 a score with no usage reported, so
no tokens and no known cost; s3 a 429 on every try, an endpoint error with no answer, tokens or cost.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Project
from judging.models import Judgement, JudgeRun
from judging.services.export import JUDGEMENT_FIELDS, export_lines
from tests.judging.llm_server import LoopbackLLM, Reply, user_text
from tests.judging.run_factories import add_samples, tag_of

pytestmark = pytest.mark.django_db

PRICES = ("--price-input", "2", "--price-output", "10")
SLOW = 0.05  # seconds s0's answer waits: its latency is at least that


def script(body: dict[str, Any], attempt: int) -> Reply:
    tag = tag_of(user_text(body))
    if tag == "s0":
        return Reply(content='{"reasoning": "All supported.", "score": 4}', prompt_tokens=1000,
                     completion_tokens=200, sleep=SLOW)
    if tag == "s1":
        return Reply(content="I would say four out of five.", prompt_tokens=800, completion_tokens=50)
    if tag == "s2":
        return Reply(content='{"reasoning": "One figure is wrong.", "score": 2}', prompt_tokens=None,
                     completion_tokens=None)
    return Reply(status=429, headers={"Retry-After": "0"})


def judge_json(*args: str) -> dict[str, Any]:
    out = io.StringIO()
    call_command("judge", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def exported(project: Project, run_id: int) -> dict[str, dict[str, Any]]:
    lines = export_lines(project, what="judgements", format="jsonl", run=JudgeRun.objects.get(pk=run_id))
    return {row["sample"]: row for row in map(json.loads, lines)}


def by_sample(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["sample"]: entry for entry in result["judgements"]}


def assert_rows_are_the_export_s(project: Project, result: dict[str, Any]) -> None:
    export = exported(project, result["run"])
    rows = by_sample(result)
    assert set(rows) == set(export)
    for tag, row in rows.items():
        # The export's keys and values, and the keys judge --json gave before (probability is p again).
        assert set(row) == {*JUDGEMENT_FIELDS, "probability"}, tag
        assert {name: row[name] for name in JUDGEMENT_FIELDS} == export[tag], tag
        assert row["probability"] == row["p"], tag


def test_judge_json_rows_are_the_exports_with_what_each_call_cost(project: Project) -> None:
    add_samples(project, 4)
    with LoopbackLLM(script) as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                            *PRICES)
    assert_rows_are_the_export_s(project, result)
    rows = by_sample(result)
    stored = {j.sample.external_id: j for j in Judgement.objects.filter(run_id=result["run"]).select_related("sample")}

    s0, s1, s2, s3 = (rows[tag] for tag in ("s0", "s1", "s2", "s3"))
    assert (s0["status"], s0["score"], s0["display_score"], s0["reasoning"]) == ("ok", 4, 4, "All supported.")
    assert s0["error"] is None  # it was "" before, where the export has null
    assert (s0["input_tokens"], s0["output_tokens"], s0["cost"]) == (1000, 200, 0.004)
    assert s0["latency"] == stored["s0"].latency_seconds >= SLOW
    assert (s0["cached"], s0["cached_call_latency"], s0["cached_call_input_tokens"],
            s0["cached_call_output_tokens"]) == (False, None, None, None)

    assert (s1["status"], s1["score"], s1["p"], s1["reasoning"]) == ("parse_error", None, None, None)
    assert s1["error"] and s1["raw"] == "I would say four out of five."
    assert (s1["input_tokens"], s1["output_tokens"], s1["cost"]) == (800, 50, 0.0021)
    assert s1["latency"] == stored["s1"].latency_seconds > 0

    assert (s2["status"], s2["score"]) == ("ok", 2)
    assert (s2["input_tokens"], s2["output_tokens"], s2["cost"]) == (None, None, None)  # no usage: not known

    assert (s3["status"], s3["score"], s3["raw"]) == ("error", None, None)
    assert "429" in s3["error"]
    assert (s3["input_tokens"], s3["output_tokens"], s3["cost"]) == (None, None, None)
    assert s3["latency"] == stored["s3"].latency_seconds > 0

    # The run's totals are the sum of its rows' costs over the calls that reported their tokens.
    assert result["cost"] == pytest.approx(0.004 + 0.0021, abs=1e-12)


def test_answers_from_the_call_cache_cost_nothing_and_carry_the_earlier_call_s_figures(project: Project) -> None:
    add_samples(project, 3)
    with LoopbackLLM(script) as server:
        args = ("--project", project.slug, "--base-url", server.base_url, "--model", "test-model", *PRICES)
        first = judge_json(*args)
        again = judge_json(*args)
        assert server.chat_calls == 3
    assert (again["calls"], again["cached"]) == (0, 3)
    assert_rows_are_the_export_s(project, again)
    paid, cached = by_sample(first), by_sample(again)
    for tag in ("s0", "s1", "s2"):
        row = cached[tag]
        assert row["cached"] is True, tag
        # This run spent nothing on it: no latency nor tokens of its own, cost 0 (not null, even where unknown then).
        assert (row["latency"], row["input_tokens"], row["output_tokens"], row["cost"]) == (None, None, None, 0.0)
        # The earlier call's figures, apart.
        assert (row["cached_call_latency"], row["cached_call_input_tokens"], row["cached_call_output_tokens"]) == (
            paid[tag]["latency"], paid[tag]["input_tokens"], paid[tag]["output_tokens"]), tag
        assert (row["status"], row["score"], row["raw"], row["error"]) == (
            paid[tag]["status"], paid[tag]["score"], paid[tag]["raw"], paid[tag]["error"]), tag
    assert (cached["s0"]["cached_call_input_tokens"], cached["s0"]["cached_call_output_tokens"]) == (1000, 200)
    assert cached["s0"]["cached_call_latency"] >= SLOW


def test_a_call_sent_while_the_judge_had_no_prices_has_a_cost_not_known(project: Project) -> None:
    add_samples(project, 2)
    with LoopbackLLM(script) as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model")
    assert_rows_are_the_export_s(project, result)
    rows = by_sample(result)
    # Tokens reported, no prices: null, never 0.
    assert (rows["s0"]["input_tokens"], rows["s0"]["output_tokens"], rows["s0"]["cost"]) == (1000, 200, None)
    assert (rows["s1"]["input_tokens"], rows["s1"]["output_tokens"], rows["s1"]["cost"]) == (800, 50, None)
    assert result["cost"] is None and "cost" in result["reasons"]


def test_a_sample_without_an_external_id_keeps_its_database_id_as_sample(project: Project) -> None:
    """`sample` keeps what judge --json gave before (scripts read it); the export's external id is in
    sample_external_id."""
    sample, = add_samples(project, 1)
    type(sample).objects.filter(pk=sample.pk).update(external_id="")
    with LoopbackLLM(script) as server:
        result = judge_json("--project", project.slug, "--base-url", server.base_url, "--model", "test-model")
    row, = result["judgements"]
    assert (row["sample"], row["sample_id"], row["sample_external_id"]) == (str(sample.pk), sample.pk, "")
    assert row["status"] == "ok" and row["error"] is None
