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


def price_text(price: float | None) -> str:
    """One price in US$ per million tokens as every page and message writes it: two decimals at least, more when the
    price has them ("$2.50", "$10.00", "$0.075", "$1,200.00"); "$0.00" for a free server's 0; "not known" for a blank
    price (None), never "$0"."""
    if price is None:
        return "not known"
    whole, _, decimals = f"{price:,.6f}".partition(".")
    return f"${whole}.{decimals.rstrip('0').ljust(2, '0')}"


def prices_text(input_price: float | None, output_price: float | None) -> str:
    """A judge's two prices per million tokens in one phrase, the one helper every surface uses (the judges page, a
    run's page, the questions asked before a run): "$2.50 in, $10.00 out"; "free ($0.00 in, $0.00 out)"; "not known"
    when both are blank; "$2.50 in, not known out" when one is."""
    if input_price is None and output_price is None:
        return "not known"
    both = f"{price_text(input_price)} in, {price_text(output_price)} out"
    return f"free ({both})" if input_price == 0 and output_price == 0 else both
