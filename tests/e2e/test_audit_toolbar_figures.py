"""The audit toolbar's figures change without moving anything beside them: the clock from "9 s" to "12 min 34 s",
the counts from 9 to 100, the save status from "Saved" to "Saving…". The words after each, the saved line and the
controls stay where they were (tabular figures and fixed room, audit.css), on a laptop and on a phone."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page

from annotate.models import Batch, Project
from tests.e2e.audit_page_helpers import open_audit
from tests.judging.audit_helpers import build_scene

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Writes each set of figures into the toolbar (as the clock, a verdict and a save would) and says where things are,
# all in one task: the clock cannot tick in between.
PLACES = """(figures) => {
  const at = (selector) => document.querySelector(selector).getBoundingClientRect();
  const set = (selector, text) => { document.querySelector(selector).textContent = text; };
  return figures.map(([clock, count, status]) => {
    set('[data-role="item-clock"]', clock);
    set('[data-role="answered"]', count);
    set('[data-role="left"]', count);
    set('[data-role="save-status"]', status);
    return {
      figures: [clock, count, status],
      leftWords: Math.round(at('[data-role="left"]').right * 10) / 10,
      progressEnd: Math.round(at('[data-role="progress"]').right * 10) / 10,
      savedLine: Math.round(at('.last-saved').left * 10) / 10,
      saveStatus: Math.round(at('[data-role="save-status"]').left * 10) / 10,
      blindToggle: Math.round(at('[data-role="blind-toggle"]').left * 10) / 10,
      keys: Math.round(at('[data-role="toggle-help"]').left * 10) / 10,
    };
  });
}"""
FIGURES = [["9 s", "9", "Saved"], ["10 s", "10", "Saving…"], ["1 min 5 s", "100", "Saved"], ["12 min 34 s", "11", "Saving…"]]


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (390, 844)])
def test_changing_figures_move_nothing_in_the_toolbar(
    page: Page, live_server: Any, log_in: Any, project: Project, batch: Batch, width: int, height: int
) -> None:
    scene = build_scene(project, batch)
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, scene.auditor)
    open_audit(page, live_server, project)
    places = page.evaluate(PLACES, FIGURES)
    first = places[0]
    for place in places[1:]:
        for name in ("leftWords", "progressEnd", "savedLine", "saveStatus", "blindToggle", "keys"):
            assert abs(place[name] - first[name]) < 0.5, (
                f"{width}x{height}: {name} moved from {first[name]} to {place[name]} px with {place['figures']}"
            )
