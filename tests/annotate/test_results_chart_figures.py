"""The results chart's figures for a screen reader: the chart is one image (role="img") named by its title and
description, which leave out the <title> of each bar's segments, so each generator's counts per worst label also
stand in a table only screen readers read (class visually-hidden), in the chart's order."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.services import stats
from tests.conftest import login
from tests.judging.audit_helpers import read_html

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


def test_the_chart_counts_are_in_a_table_a_screen_reader_reads(scene: dict[str, Any]) -> None:
    page = read_html(login(scene["admin"]).get("/projects/demo/results/").content)
    hidden = [div for div in page.find("div") if "visually-hidden" in div.attrs.get("class", "").split()]
    table = next(found for div in hidden for found in div.find("table", data_role="chart-figures"))
    header = [" ".join(cell.text.split()) for cell in table.find("thead")[0].find("th")]
    assert header == ["Generator", "Consistent", "Benign", "Questionable", "Unwanted", "Samples"]
    rows = {
        " ".join(row.find("th")[0].text.split()): [" ".join(cell.text.split()) for cell in row.find("td")]
        for row in table.find("tbody")[0].find("tr")
    }
    assert sorted(rows) == sorted(stats.project_halu_rates(scene["project"], 1))
    # model-a: s0 (U), t0 (U), t3 (C): Consistent 1, Unwanted 2, of 3.
    consistent, benign, questionable, unwanted, samples = rows["model-a"]
    assert (consistent.split()[0], benign.split()[0], questionable.split()[0], unwanted.split()[0], samples) == (
        "1", "0", "0", "2", "3")
