"""Helpers shared by the members page and batch annotators page tests: work done in round 1."""

from __future__ import annotations

from typing import Any

from annotate.services import spans

HTMX = {"HTTP_HX_REQUEST": "true"}


def give_work(batch: Any, user: Any) -> None:
    """One span and one sample marked done in round 1."""
    first = batch.samples.order_by("position").first()
    spans.create_span(first, user, round=1, start=0, end=4, labels=["Benign"])
    spans.mark_sample_done(first, user, round=1, done=True)


def submit_batch(batch: Any, user: Any) -> None:
    for sample in batch.samples.all():
        spans.mark_sample_done(sample, user, round=1, done=True)
