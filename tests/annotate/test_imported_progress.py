"""Imported FaithBench work shows as what it is: submitted, every sample done, no time recorded.

An import stores spans and submitted assignments but no per-sample reviews, so the pages must not read
the missing reviews as "not done" (an empty progress bar beside "submitted", every sample "open") or as
"0 s" spent on each sample.
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Batch
from tests.conftest import login

pytestmark = pytest.mark.django_db


def test_the_sample_browser_shows_imported_annotators_done_without_a_time(imported: Batch, admin_user: Any) -> None:
    response = login(admin_user).get(f"/projects/fb/batches/{imported.pk}/samples/")
    assert response.status_code == 200
    page = response.context["page"]
    assert [(person.username, person.submitted) for person in page.annotators] == [("Ana", True), ("Bo", True)]
    # Ana: two spans on sample 0, none on sample 1; Bo: one span on each (the example file).
    cells = [[(cell.done, cell.spans, cell.seconds) for cell in row.cells] for row in page.rows]
    assert cells == [[(True, 2, None), (True, 1, None)], [(True, 0, None), (True, 1, None)]]
    assert [person.median_seconds for person in page.annotators] == [None, None]
    html = response.content.decode()
    assert 'data-role="seconds"' not in html and ">open<" not in html
    # "Done by all" finds both samples; "not done by someone" none.
    done_by_all = login(admin_user).get(f"/projects/fb/batches/{imported.pk}/samples/?done=all")
    not_done = login(admin_user).get(f"/projects/fb/batches/{imported.pk}/samples/?done=open")
    assert (len(done_by_all.context["page"].rows), len(not_done.context["page"].rows)) == (2, 0)


def test_the_project_page_shows_imported_annotators_with_every_sample_done(imported: Batch, admin_user: Any) -> None:
    response = login(admin_user).get("/projects/fb/")
    people = {person["assignment"].annotator.username: person for person in response.context["batches"][0]["people"]}
    assert {name: (person["done"], person["percent"]) for name, person in people.items()} == {
        "Ana": (2, 100), "Bo": (2, 100)}
    assert response.content.decode().count('<span data-role="done">2 / 2</span>') == 2  # done / the batch's samples
