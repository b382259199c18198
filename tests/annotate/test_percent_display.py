"""One way to write a rate or share on every page: percent, 2 decimals, a % sign (annotate.percent). The results
page used to show 33.33 (no sign) in its tables and 33.3% in its chart, while the pairs pages showed 100.00%."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.pairmath import spam
from annotate.percent import percent_text, share_text
from tests.conftest import login
from tests.judging.audit_helpers import read_html

WRITTEN = re.compile(r"^\d{1,3}\.\d{2}%$")


@pytest.mark.parametrize(("value", "text"), [(33.333, "33.33%"), (100, "100.00%"), (0, "0.00%"), (66.666, "66.67%"),
                                             (None, "—"), (float("nan"), "—")])
def test_a_figure_in_percent_has_two_decimals_and_a_sign(value: float | None, text: str) -> None:
    assert percent_text(value) == text


@pytest.mark.parametrize(("share", "text"), [(0.76, "76.00%"), (1, "100.00%"), (1 / 3, "33.33%"), (None, "—")])
def test_a_share_is_written_in_percent(share: float | None, text: str) -> None:
    assert share_text(share) == text


@pytest.mark.django_db
@pytest.mark.usefixtures("empty_cache", "quick_passwords")
def test_the_results_page_writes_every_rate_and_score_by_the_rule(scene: dict[str, Any]) -> None:
    page = read_html(login(scene["admin"]).get("/projects/demo/results/").content)
    rates = [cell for cell in page.find("td") if "data-rate" in cell.attrs]
    assert rates
    for cell in rates:
        assert cell.text == percent_text(float(cell.attrs["data-rate"])), cell.text
    scores = page.find("td", data_metric="balanced_accuracy") + page.find("td", data_metric="f1_macro")
    assert scores and all(WRITTEN.match(cell.text) for cell in scores), [cell.text for cell in scores]
    segments = [rect for rect in page.find("rect") if "data-count" in rect.attrs]
    assert segments
    for rect in segments:
        share = re.search(r"\((.*)\)$", rect.one("title").text)
        assert share and WRITTEN.match(share.group(1)), rect.one("title").text


def test_a_spammer_flag_writes_its_measured_share_by_the_rule_and_its_limit_as_set() -> None:
    text = spam.explain(spam.DISAGREES, {"differing": 1, "compared": 3, "share": 1 / 3, "limit_share": 0.3})
    assert text == ("1 of 3 votes (33.33%) differ from the other judges' majority on items where they have one; "
                    "the limit is 30%")
