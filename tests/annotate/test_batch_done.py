"""The batch annotators page counts done samples by the rule of every other page (imported work included),
and unassigning a re-opened imported annotator still names the work that stays stored."""

from __future__ import annotations

import html
import json
from typing import Any

import pytest

from annotate.models import Assignment, Batch, Membership, Project, SpanAnnotation
from annotate.services import ingest, members
from tests.annotate.member_helpers import give_work
from tests.annotate.test_ingest import example
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(admin_user: Any) -> Batch:
    """The team's example: two samples; Ana has two spans on the first, Bo one on each; Cy is on the roster only."""
    project = Project.objects.create(name="FaithBench", slug="fb")
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    ingest.import_files(project, [("batch_1.json", json.dumps(example()).encode())], roster=["Ana", "Bo", "Cy"])
    return Batch.objects.get(project=project)


def done_column(page: str, username: str) -> tuple[str, str]:
    """The Done / samples and Spans cells of one annotator's row."""
    row = page[page.index(f'data-annotator="{username}"'):]
    row = row[: row.index("</tr>")]
    cells = [cell.split("</td>")[0] for cell in row.split("<td>")[1:]]
    return cells[1], cells[2]


def test_imported_annotators_show_their_submitted_samples_as_done(imported: Batch, admin_user: Any) -> None:
    page = login(admin_user).get(f"/projects/fb/batches/{imported.pk}/annotators/").content.decode()
    # Submitted on import with spans and no done marks: every sample counts as done, as on the project page.
    assert done_column(page, "Ana") == ("2 / 2", "2")
    assert done_column(page, "Bo") == ("2 / 2", "2")
    assert done_column(page, "Cy") == ("2 / 2", "0")
    overview = login(admin_user).get("/projects/fb/").context["batches"][0]["people"]
    assert {p["assignment"].annotator.username: p["done"] for p in overview} == {"Ana": 2, "Bo": 2, "Cy": 2}


def test_a_native_annotator_in_progress_counts_only_marked_samples(batch: Batch, admin_user: Any, alice: Any,
                                                                    bob: Any) -> None:
    give_work(batch, alice)  # one span, one of three samples marked done; bob has nothing
    page = login(admin_user).get(f"/projects/demo/batches/{batch.pk}/annotators/").content.decode()
    assert done_column(page, "alice") == ("1 / 3", "1")
    assert done_column(page, "bob") == ("0 / 3", "0")


def test_unassigning_a_re_opened_imported_annotator_names_the_spans_that_stay_stored(
    imported: Batch, admin_user: Any
) -> None:
    client = login(admin_user)
    ana = imported.assignments.get(annotator__username="Ana")
    refused = client.post(f"/projects/fb/assignments/{ana.pk}/unassign/", {"confirm": "yes"})
    assert refused.status_code == 400
    assert "Ana submitted batch_1 round 1; re-open the round before you unassign them" in html.unescape(
        refused.content.decode()
    )

    assert client.post(f"/projects/fb/assignments/{ana.pk}/reopen/", {"reason": "fix a span"}).status_code == 302
    page = client.get(f"/projects/fb/batches/{imported.pk}/annotators/").content.decode()
    # Re-opened, her imported samples are no longer done until she marks them (the home page says the same).
    assert done_column(page, "Ana") == ("0 / 2", "2")
    assert members.assignment_work(Assignment.objects.get(pk=ana.pk)) == members.Work(spans=2, done=0)

    asked = client.post(f"/projects/fb/assignments/{ana.pk}/unassign/")
    assert asked.status_code == 409
    assert ("Ana has 2 spans and 0 samples marked done in batch_1 round 1. If you unassign them, that "
            "work stays stored") in html.unescape(asked.content.decode())
    assert Assignment.objects.filter(pk=ana.pk).exists()
    done = client.post(f"/projects/fb/assignments/{ana.pk}/unassign/", {"confirm": "yes"})
    assert done.status_code == 200
    assert not Assignment.objects.filter(pk=ana.pk).exists()
    assert SpanAnnotation.objects.filter(sample__batch=imported, annotator__username="Ana").count() == 2
