"""``/api/samples/?project=`` and ``?batch=`` answer a filter naming nothing the caller may see with 404, as
``/api/pairs/?project=`` does (it answered 200 with an empty list), the same 404 for a project that does not exist
and one the caller has no role in. A sample carries ``batch_id``, the value ``?batch=`` takes (``batch`` stays the
batch's name)."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Batch, Membership, Passage, Project, Sample
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def hidden_project(admin_user: Any) -> Project:
    """A span project alice and charlie have no role in, with one batch."""
    project = Project.objects.create(name="Hidden", slug="hidden")
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    batch = Batch.objects.create(project=project, name="h-1")
    passage = Passage.objects.create(project=project, external_id="hp", text="Hidden source.")
    Sample.objects.create(project=project, passage=passage, batch=batch, position=0, summary="Hidden summary.")
    return project


@pytest.mark.parametrize("slug", ["nope", "hidden"])
def test_a_project_one_may_not_see_gets_the_404_pairs_gives(
    batch: Batch, hidden_project: Project, two_item_pairs: Project, charlie: Any, slug: str
) -> None:
    client = login(charlie)
    samples = client.get("/api/samples/", {"project": slug})
    pairs = client.get("/api/pairs/", {"project": slug})
    assert samples.status_code == pairs.status_code == 404
    assert samples.json() == {"detail": "No such project"}
    assert set(samples.json()) == set(pairs.json()) == {"detail"}


def test_an_annotator_is_hidden_a_project_they_are_not_in(batch: Batch, hidden_project: Project, alice: Any) -> None:
    hidden = login(alice).get("/api/samples/", {"project": "hidden"})
    missing = login(alice).get("/api/samples/", {"project": "no-such-slug"})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json()


def test_a_pairs_project_is_named_as_such_to_its_members(two_item_pairs: Project, alice: Any) -> None:
    """As the pairs endpoints tell a member that a span project is the other kind."""
    response = login(alice).get("/api/samples/", {"project": "pairs"})
    assert response.status_code == 400
    message = response.json()["project"][0]
    assert "'pairs' is a pairs project" in message and "/api/pairs/?project=pairs" in message


def test_a_member_still_lists_the_projects_samples(batch: Batch, alice: Any) -> None:
    response = login(alice).get("/api/samples/", {"project": "demo"})
    assert response.status_code == 200
    assert response.json()["count"] == batch.samples.count()


def test_a_sample_carries_the_batch_id_that_the_batch_filter_takes(batch: Batch, project: Project, admin_user: Any) -> None:
    second = Batch.objects.create(project=project, name="batch-2", position=1)
    passage = Passage.objects.get(project=project)
    Sample.objects.create(project=project, passage=passage, batch=second, position=0, summary="Second batch.")
    client = login(admin_user)
    rows = client.get("/api/samples/", {"project": "demo"}).json()["results"]
    assert {(row["batch"], row["batch_id"]) for row in rows} == {("batch-1", batch.pk), ("batch-2", second.pk)}
    only = client.get("/api/samples/", {"batch": second.pk}).json()["results"]
    assert [row["summary"] for row in only] == ["Second batch."]
    assert {row["batch_id"] for row in only} == {second.pk}
    one = client.get(f"/api/samples/{only[0]['id']}/").json()
    assert one["batch_id"] == second.pk and one["batch"] == "batch-2"


def test_a_batch_one_may_not_see_is_the_404_of_none(batch: Batch, hidden_project: Project, alice: Any) -> None:
    hidden_batch = Batch.objects.get(project=hidden_project)
    hidden = login(alice).get("/api/samples/", {"batch": hidden_batch.pk})
    missing = login(alice).get("/api/samples/", {"batch": hidden_batch.pk + 1000})
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json() == {"detail": "No such batch"}


def test_an_annotator_is_hidden_a_batch_they_are_not_assigned(batch: Batch, project: Project, alice: Any) -> None:
    unassigned = Batch.objects.create(project=project, name="batch-9", position=9)
    response = login(alice).get("/api/samples/", {"batch": unassigned.pk})
    assert response.status_code == 404 and response.json() == {"detail": "No such batch"}


def test_a_bad_filter_is_still_a_400_before_any_lookup(batch: Batch, charlie: Any) -> None:
    response = login(charlie).get("/api/samples/", {"project": "nope", "batch": "x"})
    assert response.status_code == 400
    assert set(response.json()) == {"batch"}


def test_the_schema_documents_batch_id_and_the_404(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    sample = document["components"]["schemas"]["Sample"]["properties"]
    assert sample["batch_id"]["type"] == "integer" and "name" in sample["batch"]["description"]
    operation = document["paths"]["/api/samples/"]["get"]
    batch = next(parameter for parameter in operation["parameters"] if parameter["name"] == "batch")
    assert "batch_id" in batch["description"]
    assert "404" in operation["responses"]
