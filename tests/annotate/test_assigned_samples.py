"""A span project's page and the home page agree on how many samples are assigned to an annotator."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.models import Assignment, Batch, Passage, Project, Sample
from annotate.services import projects
from tests.conftest import SOURCE, login

pytestmark = pytest.mark.django_db


def add_batch(project: Project, name: str, count: int, *annotators: Any) -> Batch:
    batch = Batch.objects.create(project=project, name=name, position=Batch.objects.filter(project=project).count())
    passage = Passage.objects.create(project=project, external_id=f"{name}-p", text=SOURCE)
    for position in range(count):
        Sample.objects.create(project=project, passage=passage, batch=batch, position=position,
                              external_id=f"{name}-{position}", summary=f"Summary {position} of {name}.",
                              generator="model-a")
    for annotator in annotators:
        Assignment.objects.create(batch=batch, annotator=annotator)
    return batch


def home_totals(user: Any, project: Project) -> dict[str, int]:
    """Each batch of the project on the user's home page with its "done / total" total, one per batch."""
    html = login(user).get("/").content.decode()
    rows = re.findall(r"<td>([^<]+)</td>\s*<td>([^<]+)</td>\s*<td>\d+</td>\s*<td><progress[^>]*></progress> \d+ / (\d+)</td>",
                      html)
    return {batch: int(total) for name, batch, total in rows if name == project.name}


def project_page_count(user: Any, project: Project) -> str:
    html = login(user).get(f"/projects/{project.slug}/").content.decode()
    found = re.search(r'data-role="sample-count">([^<]*)<', html)
    assert found, "the project page shows no sample count"
    return found.group(1)


@pytest.fixture
def two_batches(project: Project, alice: Any, bob: Any) -> tuple[Batch, Batch]:
    """Batch 'mine' (4 samples) assigned to alice and bob, batch 'theirs' (3 samples) to bob alone."""
    return add_batch(project, "mine", 4, alice, bob), add_batch(project, "theirs", 3, bob)


def test_an_annotator_sees_her_share_and_the_whole_as_the_home_page_counts_it(project, alice, bob, two_batches):
    mine, _ = two_batches
    Assignment.objects.create(batch=mine, annotator=alice, round=2)  # round 2 of the same samples: no new ones
    totals = home_totals(alice, project)
    assert totals == {"mine": 4}
    assert project_page_count(alice, project) == f"{sum(totals.values())} samples assigned to you of 7"
    bob_totals = home_totals(bob, project)
    assert project_page_count(bob, project) == f"{sum(bob_totals.values())} samples assigned to you of 7"
    assert sum(bob_totals.values()) == 7


def test_an_annotator_with_nothing_assigned_is_told_so(project, alice, two_batches):
    Assignment.objects.filter(annotator=alice).delete()
    assert home_totals(alice, project) == {}
    assert project_page_count(alice, project) == "0 samples assigned to you of 7"


def test_an_admin_sees_the_projects_samples(project, admin_user, two_batches):
    assert project_page_count(admin_user, project) == "7 samples"


def test_assigned_samples_lists_each_assigned_batchs_samples_in_page_order(project, alice, two_batches):
    mine, _ = two_batches
    expected = list(mine.samples.order_by("position", "id").values_list("id", flat=True))
    assert projects.assigned_samples(alice, project) == {mine.pk: expected}
    assert projects.assigned_sample_count(alice, project) == 4
    other = Project.objects.create(name="Other", slug="other")
    assert projects.assigned_samples(alice, other) == {}
