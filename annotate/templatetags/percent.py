"""``{% load percent %}``: the pages' one way of writing rates and shares (annotate.percent)."""

from __future__ import annotations

from typing import Any

from django import template

from annotate.percent import percent_text, share_text

register = template.Library()


@register.filter(name="percent")
def percent(value: Any) -> str:
    """A figure in percent (0-100) as "33.33%"; "—" when there is none."""
    return percent_text(_number(value))


@register.filter(name="share_percent")
def share_percent(value: Any) -> str:
    """A share (0-1) as "76.00%"; "—" when there is none."""
    return share_text(_number(value))


def _number(value: Any) -> float | None:
    # Template values may arrive as text (a cached figure, a data-* attribute); anything unreadable shows the dash.
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
