"""The results page's detector table and its challenging-samples section agree on which detectors the project has:
when the table cannot score them it says what is missing (a submitted verdict, or the detectors' outputs on the
judged samples), never "no detector outputs" while the section below lists them."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, Batch
from tests.conftest import login
from tests.judging.audit_helpers import read_html

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

# Detectors are listed by name (annotate.results.detector_order), whatever order the database keeps the keys in.
DETECTORS = ["gpt_4o", "hhem-2.1"]


def with_detectors(batch: Batch, *, from_position: int = 0) -> None:
    """FaithBench-like detector outputs in the metadata of the batch's samples from ``from_position`` on."""
    for sample in batch.samples.filter(position__gte=from_position).order_by("position"):
        sample.metadata = {"summarizer": sample.generator, "gpt_4o": sample.position % 2,
                           "hhem-2.1": 0.2 + 0.3 * sample.position}
        sample.save()


def results_page(user: Any) -> Any:
    response = login(user).get("/projects/demo/results/")
    assert response.status_code == 200
    return read_html(response.content)


def test_with_nothing_submitted_the_table_says_the_verdicts_are_missing(batch: Batch, admin_user: Any) -> None:
    with_detectors(batch)
    page = results_page(admin_user)
    selection = page.one("p", data_role="selection-summary").text
    assert "detectors: gpt_4o, hhem-2.1" in selection
    table = page.one("table", data_role="detectors")
    assert "No detector outputs" not in table.text
    note = page.one("p", data_role="unscored-detectors")
    assert note.attrs["data-detectors"].split(",") == DETECTORS
    text = " ".join(note.text.split())
    assert "outputs of gpt_4o, hhem-2.1" in text and "no sample has a submitted verdict in round 1" in text


def test_a_submitted_batch_gets_the_detectors_scored(batch: Batch, admin_user: Any) -> None:
    with_detectors(batch)
    Assignment.objects.filter(batch=batch).update(status=Assignment.Status.SUBMITTED)
    page = results_page(admin_user)
    assert [row.attrs["data-detector"] for row in page.find("tr") if "data-detector" in row.attrs] == DETECTORS
    assert not page.find("p", data_role="unscored-detectors")


def test_detectors_only_on_unjudged_samples_are_named_as_such(project: Any, batch: Batch, admin_user: Any) -> None:
    """The judged batch has no detector outputs; a second, unsubmitted batch has them."""
    Assignment.objects.filter(batch=batch).update(status=Assignment.Status.SUBMITTED)
    second = Batch.objects.create(project=project, name="batch-2", position=1)
    for sample in batch.samples.order_by("position"):
        sample.pk = None
        sample.batch = second
        sample.external_id = f"b2-{sample.position}"
        sample.summary += " Another output."  # not a copy: the selection counts a copied output once
        sample.save()
    with_detectors(second)
    page = results_page(admin_user)
    assert "No detector outputs" not in page.one("table", data_role="detectors").text
    text = " ".join(page.one("p", data_role="unscored-detectors").text.split())
    assert text.startswith("None of the 3 samples with a submitted verdict in round 1 has outputs of gpt_4o, hhem-2.1")


def test_a_project_without_detectors_still_says_so(batch: Batch, admin_user: Any) -> None:
    page = results_page(admin_user)
    assert page.one("td", data_role="no-detector").text == "No detector outputs in the samples' metadata."
    assert not page.find("p", data_role="unscored-detectors")
