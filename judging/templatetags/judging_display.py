"""How a judgement's number reads on a page (a rubric score with its label, or an NLI p with 1 + 4p beside it), and a
judge's prices."""

from __future__ import annotations

from django import template

from judging.costs import prices_text
from judging.models import Judge, Judgement
from judging.models.judges import SCORE_LABELS

register = template.Library()


@register.filter
def score_text(judgement: Judgement) -> str:
    """``4 · very faithful``; ``p 0.732 · 1 + 4p = 3.93`` (our scaling: the paper gives none); ``—`` when failed."""
    if judgement.score is not None:
        return f"{judgement.score} · {SCORE_LABELS[judgement.score]}"
    if judgement.probability is not None:
        return f"p {judgement.probability:.3f} · 1 + 4p = {1 + 4 * judgement.probability:.2f}"
    return "—"


@register.filter
def score_label(level: int) -> str:
    return SCORE_LABELS.get(level, "")


@register.filter
def judge_prices(judge: Judge) -> str:
    """The judge's prices per million tokens, as judging.costs.prices_text writes them everywhere: "$2.50 in, $10.00
    out", "free ($0.00 in, $0.00 out)", "not known"."""
    return prices_text(judge.price_input_per_mtok, judge.price_output_per_mtok)
