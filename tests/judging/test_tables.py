"""The paper's tables over plain rows, with every figure worked out by hand."""

from __future__ import annotations

from statistics import fmean
from typing import Any

import pytest

from judging.tables import cost_table, residual_table, sensitivity_table


def row(judge: str, kind: str, percent: int, score: float | None, *, sample: int = 1, mode: str = "reasoning",
        latency: float | None = None, tokens: int | None = None, cost: float | None = None,
        cached: bool = False, status: str | None = None) -> dict[str, Any]:
    entry = {"judge": judge, "mode": mode, "type": kind, "percent": percent, "expected": 5 if kind == "gold" else 1,
             "score": score, "latency": latency, "output_tokens": tokens, "cost": cost, "sample": sample,
             "cached": cached}
    if status is not None:
        entry["status"] = status
    return entry


# Judge A: two gold outputs, two intrinsic versions, one extrinsic version scored and one that failed.
A_ROWS = [
    row("A", "gold", 0, 5, sample=1),        # |5 - 5| = 0
    row("A", "gold", 0, 3, sample=2),        # |5 - 3| = 2
    row("A", "intrinsic", 20, 4),            # |1 - 4| = 3
    row("A", "intrinsic", 100, 1),           # |1 - 1| = 0
    row("A", "extrinsic", 20, 5),            # |1 - 5| = 4
    row("A", "extrinsic", 40, None),         # failed: in no mean
]


def test_residual_per_type_and_overall_over_pairs():
    table = residual_table(A_ROWS)
    assert table["columns"] == ["gold", "intrinsic", "extrinsic", "overall"]
    (entry,) = table["rows"]
    assert entry["judge"] == "A" and entry["mode"] == "reasoning"
    assert entry["gold"] == pytest.approx(1.0)        # (0 + 2) / 2
    assert entry["intrinsic"] == pytest.approx(1.5)   # (3 + 0) / 2
    assert entry["extrinsic"] == pytest.approx(4.0)   # 4 / 1
    assert entry["overall"] == pytest.approx(1.8)     # (0 + 2 + 3 + 0 + 4) / 5
    # The mean of the three columns would be (1 + 1.5 + 4) / 3 = 2.1667: not what the table reports.
    assert fmean([entry["gold"], entry["intrinsic"], entry["extrinsic"]]) == pytest.approx(13 / 6)
    assert entry["pairs"] == {"gold": 2, "intrinsic": 2, "extrinsic": 1, "overall": 5}
    assert entry["failed"] == 1


def test_residual_keeps_judges_and_modes_apart_and_takes_nli_display_scores():
    rows = [
        row("A", "gold", 0, 4),
        row("A", "gold", 0, 2, mode="score only"),
        row("N", "gold", 0, 1 + 4 * 0.75, mode="NLI judge"),      # 4.0 -> residual 1
        row("N", "intrinsic", 20, 1 + 4 * 0.25, mode="NLI judge"),  # 2.0 -> residual 1
    ]
    table = {(entry["judge"], entry["mode"]): entry for entry in residual_table(rows)["rows"]}
    assert table[("A", "reasoning")]["gold"] == pytest.approx(1.0)
    assert table[("A", "score only")]["gold"] == pytest.approx(3.0)
    assert table[("N", "NLI judge")]["overall"] == pytest.approx(1.0)
    assert table[("N", "NLI judge")]["extrinsic"] is None
    assert table[("N", "NLI judge")]["pairs"]["extrinsic"] == 0


def test_sensitivity_means_per_step_and_delta_per_step():
    scores = {1: [5, 5, 4, 3, 2, 1], 2: [4, 4, 4, 2, 2, 2]}  # per sample, at 0, 20, ..., 100 %
    rows = []
    for sample, values in scores.items():
        rows.append(row("B", "gold", 0, values[0], sample=sample))
        rows += [row("B", "intrinsic", percent, value, sample=sample)
                 for percent, value in zip((20, 40, 60, 80, 100), values[1:], strict=True)]
    table = sensitivity_table(rows)
    assert table["percents"] == [0, 20, 40, 60, 80, 100]
    (entry,) = table["rows"]  # no extrinsic rows: no extrinsic line
    assert entry["type"] == "intrinsic"
    assert [step["mean"] for step in entry["steps"]] == pytest.approx([4.5, 4.5, 4.0, 2.5, 2.0, 1.5])
    assert [step["pairs"] for step in entry["steps"]] == [2] * 6
    assert entry["delta"] == pytest.approx((1.5 - 4.5) / 5)  # -0.6


def test_sensitivity_zero_step_uses_the_gold_of_the_same_outputs_and_skips_failures():
    table = sensitivity_table(A_ROWS)
    by_type = {entry["type"]: entry for entry in table["rows"]}
    intrinsic = by_type["intrinsic"]
    # Only sample 1 has intrinsic versions, so 0% is its gold (5), not the mean of both golds (4).
    assert [step["mean"] for step in intrinsic["steps"]] == [5.0, 4.0, None, None, None, 1.0]
    assert intrinsic["delta"] == pytest.approx((1 - 5) / 5)
    extrinsic = by_type["extrinsic"]
    assert [step["mean"] for step in extrinsic["steps"]] == [5.0, 5.0, None, None, None, None]
    assert extrinsic["steps"][2]["failed"] == 1
    assert extrinsic["delta"] is None  # no 100% score: no delta, not a guess
    assert extrinsic["failed"] == 1


def test_sensitivity_without_sample_keys_takes_every_gold_output():
    rows = [{key: value for key, value in entry.items() if key != "sample"} for entry in A_ROWS]
    intrinsic = next(entry for entry in sensitivity_table(rows)["rows"] if entry["type"] == "intrinsic")
    assert intrinsic["steps"][0]["mean"] == pytest.approx(4.0)  # (5 + 3) / 2


def test_cost_means_count_every_answered_call_and_keep_cache_hits_and_endpoint_errors_apart():
    rows = [
        row("A", "gold", 0, 5, latency=2.0, tokens=100, cost=0.01),
        row("A", "intrinsic", 20, 2, latency=4.0, tokens=50, cost=0.03),
        row("A", "intrinsic", 40, 1, latency=3.0, tokens=None, cost=None),  # tokens not reported
        # Answered and paid, but no score could be read: a call like the others.
        row("A", "intrinsic", 60, None, status="parse_error", latency=5.0, tokens=90, cost=0.05),
        row("A", "intrinsic", 80, 1, latency=0.5, tokens=70, cost=0.0, cached=True),  # no call made
        row("A", "extrinsic", 20, None, status="parse_error", latency=0.7, tokens=60, cost=0.0, cached=True),
        # No answer (an imported line may still carry the seconds spent waiting): not a call, not in the means.
        row("A", "intrinsic", 100, None, status="error", latency=100.0),
        row("N", "gold", 0, 4.2, mode="NLI judge", latency=0.01),
        row("N", "intrinsic", 20, 1.4, mode="NLI judge", latency=0.03),
    ]
    table = {entry["judge"]: entry for entry in cost_table(rows)["rows"]}
    llm = table["A"]
    assert llm["latency"] == pytest.approx(3.5)          # (2 + 4 + 3 + 5) / 4
    assert llm["output_tokens"] == pytest.approx(80.0)   # (100 + 50 + 90) / 3
    assert llm["cost"] == pytest.approx(0.03)            # (0.01 + 0.03 + 0.05) / 3
    assert (llm["calls"], llm["parse_errors"], llm["cached"], llm["errors"]) == (4, 1, 2, 1)
    assert llm["failed"] == 3  # no score: the parse error, the cached parse error, the endpoint error
    nli = table["N"]
    assert nli["latency"] == pytest.approx(0.02)
    assert nli["output_tokens"] is None and nli["cost"] is None
    assert (nli["calls"], nli["errors"]) == (2, 0)
    assert nli["mode"] == "NLI judge"


def test_only_failures_give_no_number():
    rows = [row("A", "gold", 0, None), row("A", "intrinsic", 20, None)]
    (residual,) = residual_table(rows)["rows"]
    assert residual["overall"] is None and residual["failed"] == 2
    (sensitivity,) = sensitivity_table(rows)["rows"]
    assert sensitivity["delta"] is None
    (cost,) = cost_table(rows)["rows"]  # no status: unscored rows count as errors, never as paid calls
    assert cost["latency"] is None and cost["calls"] == 0 and cost["errors"] == 2 and cost["failed"] == 2
