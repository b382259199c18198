"""The span page's toolbar holds one row on a 1280 px wide screen, with a batch of 90 samples (two-digit positions
and progress): its last button, ?, used to take a second row of its own, 40 px of the texts gone on every sample."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from annotate.models import Sample, SampleReview
from tests.e2e.annotation_helpers import open_sample

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# The top of every part of the toolbar that takes room, and the toolbar's height.
ROWS = """() => {
  const bar = document.querySelector('#annotator > .toolbar');
  const parts = [...bar.children].filter((el) => el.getBoundingClientRect().width > 0 && !el.matches('.spacer'));
  return {height: bar.getBoundingClientRect().height,
          tops: parts.map((el) => [el.dataset.role || el.className, Math.round(el.getBoundingClientRect().top)])};
}"""


def test_the_toolbar_is_one_row_at_1280_pixels(
    page: Page, live_server: Any, log_in: Any, alice: Any, batch: Any, sample: Sample
) -> None:
    passage = sample.passage
    Sample.objects.bulk_create(
        Sample(project=batch.project, passage=passage, batch=batch, position=position, external_id=str(position),
               summary=sample.summary, generator=f"model-{position}")
        for position in range(3, 90)
    )
    shown = batch.samples.get(position=81)
    for done in batch.samples.filter(position__lt=80):
        SampleReview.objects.create(sample=done, annotator=alice, round=1, done=True)
    page.set_viewport_size({"width": 1280, "height": 720})
    log_in(page, alice)
    open_sample(page, live_server, shown)

    rows = page.evaluate(ROWS)
    tops = [top for _, top in rows["tops"]]
    assert max(tops) - min(tops) < 15, rows
    assert rows["height"] < 60, rows
