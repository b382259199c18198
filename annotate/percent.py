"""How pages write a rate or a share: in percent, with 2 decimals and a % sign ("33.33%", "100.00%").

One rule for every figure a page computes from the data (hallucination rates, detector scores, agreement shares,
a chart's segments, a judge's confirmed flags, a spammer's disagreeing share): the 2 decimals the commands and
the API already round to (DESIGN.md, "Interfaces"), which stay numbers without a sign there. A setting or a fixed
step (a limit of 30%, the 20% steps of a synthetic set) is written as it was given, not by this rule.
Pure: no Django imports.
"""

from __future__ import annotations

import math

DECIMALS = 2
MISSING = "—"  # a figure that is undefined or not there, as the tables show it


def percent_text(value: float | None) -> str:
    """A figure already in percent (0-100): ``33.333`` -> ``"33.33%"``; None or NaN -> the dash."""
    if value is None or isinstance(value, bool) or not math.isfinite(float(value)):
        return MISSING
    return f"{float(value):.{DECIMALS}f}%"


def share_text(share: float | None) -> str:
    """A share from 0 to 1, in percent: ``0.76`` -> ``"76.00%"``."""
    if share is None or isinstance(share, bool) or not math.isfinite(float(share)):
        return MISSING
    return percent_text(100 * float(share))
