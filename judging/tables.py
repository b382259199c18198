"""The paper's three tables over judgements of synthetic items: residual, sensitivity, cost. Pure: no Django.

A row is one judgement of one synthetic item, a mapping with:
    judge, mode         who judged, and how ("reasoning", "score only", an NLI judge)
    type, percent       "gold" (0%), "intrinsic" or "extrinsic" (20..100%)
    expected            5 for gold, 1 for a hallucinated version
    score               the display score (1..5, or 1 + 4p for NLI), None when the judgement failed
    latency, output_tokens, cost    per call; None where unknown
    unpriced            (optional) true when the call reported tokens but has no price (the judge had none when it
                        was sent): its cost is None, not known, never 0
    status              (optional) "ok", "parse_error" or "error"; by default "ok" when scored, else "error"
    sample              (optional) the output the item was made from
    cached              (optional) true when the judgement was answered from the call cache, without a call

Failed judgements (score None) are left out of every mean of scores and counted
apart, never replaced by a number. The cost table is about calls, not scores: a
parse error was answered and paid like any other answer, so it counts there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from statistics import fmean
from typing import Any

from judging.synthetic import DEFAULT_SENTENCES_PER_OUTPUT, GOLD, HALLUCINATION_TYPES, percent_steps

Row = Mapping[str, Any]
RESIDUAL_COLUMNS = (GOLD, *HALLUCINATION_TYPES)
OK, PARSE_ERROR, ERROR = "ok", "parse_error", "error"  # a judgement's status (judging.models.Judgement.Status)
ANSWERED = (OK, PARSE_ERROR)  # the endpoint answered: the call was paid, whether or not the answer held a score


def judge_label(judge: str, mode: str) -> str:
    """"name (mode)", or the name alone when it already ends with its mode (a judge named after its model and mode,
    as judging.services.judges.edit names one: "fake-2 (score only)")."""
    suffix = f" ({mode})"
    return judge if judge.endswith(suffix) else judge + suffix


def _mean(values: Iterable[float | None]) -> float | None:
    present = [float(value) for value in values if value is not None]
    return fmean(present) if present else None


def _by_judge(rows: Iterable[Row]) -> dict[tuple[str, str], list[Row]]:
    """Rows grouped per (judge, mode), in the order judges first appear."""
    grouped: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        grouped.setdefault((str(row["judge"]), str(row["mode"])), []).append(row)
    return grouped


def _scored(rows: Iterable[Row]) -> list[Row]:
    return [row for row in rows if row["score"] is not None]


def residual_table(rows: Iterable[Row]) -> dict[str, Any]:
    """Mean |expected - score| per judge, per type and overall.

    Overall is the mean over all the judge's pairs, not the mean of the three
    columns: the columns hold different numbers of pairs (five hallucinated
    versions per gold output and type), and the paper averages pairs.
    """
    table = []
    for (judge, mode), judge_rows in _by_judge(rows).items():
        scored = _scored(judge_rows)
        residuals = {column: [abs(row["expected"] - row["score"]) for row in scored if row["type"] == column]
                     for column in RESIDUAL_COLUMNS}
        every = [abs(row["expected"] - row["score"]) for row in scored]
        entry: dict[str, Any] = {"judge": judge, "mode": mode}
        entry.update({column: _mean(values) for column, values in residuals.items()})
        entry["overall"] = _mean(every)
        entry["pairs"] = {**{column: len(values) for column, values in residuals.items()}, "overall": len(every)}
        entry["failed"] = len(judge_rows) - len(scored)
        table.append(entry)
    return {"columns": [*RESIDUAL_COLUMNS, "overall"], "rows": table}


def sensitivity_table(
    rows: Iterable[Row], *, sentences_per_output: int = DEFAULT_SENTENCES_PER_OUTPUT
) -> dict[str, Any]:
    """Mean score at each percentage step per judge and type, and delta per step = (mean at 100% - mean at 0%) / n.

    The 0% step of a type is the gold outputs. When rows name their sample,
    only the gold outputs that also have items of that type (for that judge)
    count, so both ends of the delta are measured on the same outputs.
    """
    percents = percent_steps(sentences_per_output)
    table = []
    for (judge, mode), judge_rows in _by_judge(rows).items():
        gold = [row for row in judge_rows if row["type"] == GOLD]
        for hallucination_type in HALLUCINATION_TYPES:
            typed = [row for row in judge_rows if row["type"] == hallucination_type]
            if not typed:
                continue
            samples = {row.get("sample") for row in typed}
            base = [row for row in gold if row.get("sample") is None or row.get("sample") in samples]
            steps = []
            for percent in percents:
                at_step = base if percent == 0 else [row for row in typed if row["percent"] == percent]
                scored = _scored(at_step)
                steps.append({"percent": percent, "mean": _mean(row["score"] for row in scored),
                              "pairs": len(scored), "failed": len(at_step) - len(scored)})
            first, last = steps[0]["mean"], steps[-1]["mean"]
            delta = None if first is None or last is None else (last - first) / sentences_per_output
            table.append({
                "judge": judge, "mode": mode, "type": hallucination_type, "steps": steps, "delta": delta,
                "failed": sum(step["failed"] for step in steps),
            })
    return {"percents": percents, "rows": table}


def _status(row: Row) -> str:
    status = row.get("status")
    if status is None:
        return OK if row["score"] is not None else ERROR
    return str(status)


def cost_table(rows: Iterable[Row]) -> dict[str, Any]:
    """Mean latency (seconds), output tokens and price (US dollars) per call, per judge and mode.

    A call counts when it was actually sent and answered: a score, or an
    answer that could not be read as one (a parse error was paid by its tokens
    and took its time like any other answer). Apart from the calls:
    ``cached``, judgements answered from the call cache (any status), which
    cost nothing and took no time; ``errors``, judgements that got no answer
    (an endpoint error after its retries, which reports no tokens and no
    price; for an NLI judge, a pair no window could hold). ``parse_errors`` is how many of
    the calls gave no score; ``failed`` every judgement without a score, as in
    the other tables. Each mean is over the calls that report that figure (an
    NLI judge reports no tokens and no price; a local server may report no
    tokens). The mean price is over ``cost_calls`` calls, those whose price is
    known: ``unpriced`` calls reported tokens while the judge had no prices, so
    what they cost is not known; they are left out of the mean, never counted
    as 0, and with no call priced the mean is None. A mean of some calls still
    estimates the price of one; it is never multiplied into a total here.
    """
    table = []
    for (judge, mode), judge_rows in _by_judge(rows).items():
        cached = [row for row in judge_rows if row.get("cached")]
        sent = [row for row in judge_rows if not row.get("cached")]
        called = [row for row in sent if _status(row) in ANSWERED]
        entry: dict[str, Any] = {
            "judge": judge, "mode": mode, "calls": len(called),
            "parse_errors": sum(1 for row in called if _status(row) == PARSE_ERROR),
            "cached": len(cached), "errors": len(sent) - len(called),
            "failed": len(judge_rows) - len(_scored(judge_rows)),
        }
        for figure in ("latency", "output_tokens"):
            entry[figure] = _mean(row.get(figure) for row in called)
        costs = [None if row.get("unpriced") else row.get("cost") for row in called]
        entry["cost"] = _mean(costs)
        entry["cost_calls"] = sum(1 for cost in costs if cost is not None)
        entry["unpriced"] = sum(1 for row in called if row.get("unpriced"))
        table.append(entry)
    return {"rows": table}
