"""US dollar figures as the API and the JSON outputs give them. Pure: no Django imports.

A cost is a sum or a mean of floats (tokens x US$ per million tokens / 1,000,000),
so it carries binary noise: 0.06115000000000002 for 0.06115. Every US$ figure
that leaves as JSON (the API's run summary, judgement and cost-table ``cost``,
``judge --json``, ``judge_tables --json``, the judgement exports) is rounded to
COST_DECIMALS places here, once. Ten places keep a cheap call's price (a
hundred tokens at US$0.01 per million is 0.000001) and a sum of millions of
them; the stored values are not rounded.
"""

from __future__ import annotations

COST_DECIMALS = 10
COST_PRECISION = f"Rounded to {COST_DECIMALS} decimal places."


def us_dollars(cost: float | None) -> float | None:
    """A US$ figure rounded to COST_DECIMALS places; None (not known) stays None, never 0."""
    return None if cost is None else round(cost, COST_DECIMALS)
