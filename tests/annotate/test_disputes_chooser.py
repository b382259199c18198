"""The disputes page without a batch offers the project's batches (it used to answer 400 "batch: which batch?
give its id, e.g. batch=12"), and its first column says what its two numbers are."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.annotate.results_scene import HTMX, tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


def test_without_a_batch_the_page_offers_each_batch(scene: dict[str, Any]) -> None:
    response = login(scene["audrey"]).get("/projects/demo/disputes/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "which batch" not in html and 'data-role="error"' not in html
    page = tags(response)
    page.one("section", data_role="batch-chooser")
    options = [option["value"] for option in page.find("option")]
    assert options == [str(scene["batch1"].pk), str(scene["batch2"].pk)]
    assert page.one("input", name="round")["value"] == "1"
    # Choosing one gives the batch's disputes, as the agreement page's links do.
    chosen = login(scene["audrey"]).get("/projects/demo/disputes/", {"batch": scene["batch2"].pk, "round": "1"})
    assert chosen.status_code == 200 and 'data-role="disputes"' in chosen.content.decode()


def test_the_chooser_is_also_the_htmx_answer_and_a_bad_batch_is_still_refused(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    partial = client.get("/projects/demo/disputes/?batch=", **HTMX)
    assert partial.status_code == 200 and "<html" not in partial.content.decode()
    assert 'data-role="batch-chooser"' in partial.content.decode()
    assert client.get("/projects/demo/disputes/?batch=abc").status_code == 400


def test_the_first_column_names_its_two_numbers(scene: dict[str, Any]) -> None:
    html = login(scene["audrey"]).get(f"/projects/demo/disputes/?batch={scene['batch2'].pk}").content.decode()
    header = re.search(r'<table class="grid compact" data-role="disputes">\s*<thead><tr><th([^>]*)>(.*?)</th>', html, re.S)
    assert header is not None
    assert "place in the batch" in header.group(1) and "sample_id in the imported file" in header.group(1)
    assert re.sub(r"<[^>]+>", "", header.group(2)) == "No. in batch (id in file)"
    row = re.search(r'<tr data-sample="\d+">\s*<td>(.*?)</td>', html, re.S)
    assert row is not None and re.sub(r"<[^>]+>", "", row.group(1)).split() == ["2", "(id", "t1)"]
