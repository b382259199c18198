"""How a judgement's number reads on a page: a rubric score with its label, or an NLI p with 1 + 4p beside it."""

from __future__ import annotations

from django import template

from judging.models import Judgement
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
