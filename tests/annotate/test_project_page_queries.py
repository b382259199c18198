"""The span project page and the annotator's home page read a fixed number of queries whatever the number of batches.

Both listed every batch with a query or three each (the reconciliation check per batch on
the project page, the annotator's reviews per assignment on the home page): 134 queries
for 60 batches.
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, Batch, Passage, Project, Sample, SampleReview
from tests.conftest import SOURCE, login
from tests.queries import counted

pytestmark = pytest.mark.django_db


def add_batches(project: Project, count: int, people: list[Any], *, submitted: bool, start: int = 0) -> list[Batch]:
    """``count`` batches of three samples, each assigned to ``people`` in round 1, with one review each."""
    passage = Passage.objects.get_or_create(project=project, external_id="p", defaults={"text": SOURCE})[0]
    batches = []
    for number in range(start, start + count):
        batch = Batch.objects.create(project=project, name=f"b{number}", position=number)
        samples = [Sample.objects.create(project=project, passage=passage, batch=batch, position=position,
                                         external_id=f"{number}-{position}", summary="A summary.")
                   for position in range(3)]
        for person in people:
            Assignment.objects.create(batch=batch, annotator=person, round=1,
                                      status=Assignment.Status.SUBMITTED if submitted else Assignment.Status.ASSIGNED)
            SampleReview.objects.create(sample=samples[0], annotator=person, round=1, done=True)
        batches.append(batch)
    return batches


def test_project_page_queries_do_not_grow_with_the_batches(project: Project, alice: Any, bob: Any,
                                                           admin_user: Any) -> None:
    client = login(admin_user)
    add_batches(project, 2, [alice, bob], submitted=True)
    client.get("/projects/demo/")  # the session and the first-use lookups, not counted
    with counted() as few:
        assert client.get("/projects/demo/").status_code == 200
    add_batches(project, 4, [alice, bob], submitted=False, start=2)
    with counted() as many:
        page = client.get("/projects/demo/").content.decode()
    assert len(many) == len(few), f"{len(few)} queries with 2 batches, {len(many)} with 6"
    # Readiness for round 2 is still worked out per batch: the two submitted batches offer it, the others wait.
    assert page.count('data-role="open-round-two"') == 2


def test_project_page_says_why_round_two_cannot_open(project: Project, alice: Any, bob: Any, admin_user: Any) -> None:
    from annotate.services.pages import project_overview

    waiting, ready, alone, opened = (
        add_batches(project, 1, [alice, bob], submitted=False, start=0)
        + add_batches(project, 1, [alice, bob], submitted=True, start=1)
        + add_batches(project, 1, [alice], submitted=True, start=2)
        + add_batches(project, 1, [alice, bob], submitted=True, start=3)
    )
    Assignment.objects.create(batch=opened, annotator=alice, round=2)
    Assignment.objects.filter(batch=waiting, annotator=alice).update(status=Assignment.Status.SUBMITTED)
    rows = {row["batch"].pk: (row["round2_ready"], row["round2_why"])
            for row in project_overview(project, admin_user, "admin")["batches"]}
    assert rows == {
        waiting.pk: (False, "waiting for round 1 from bob"),
        ready.pk: (True, ""),
        alone.pk: (False, "reconciliation needs at least two round-1 annotators"),
        opened.pk: (False, "round 2 is already open"),
    }


def test_home_page_queries_do_not_grow_with_the_assignments(project: Project, alice: Any, bob: Any) -> None:
    client = login(alice)
    add_batches(project, 2, [alice, bob], submitted=False)
    client.get("/")
    with counted() as few:
        assert client.get("/").status_code == 200
    add_batches(project, 4, [alice, bob], submitted=False, start=2)
    with counted() as many:
        page = client.get("/").content.decode()
    assert len(many) == len(few), f"{len(few)} queries with 2 assignments, {len(many)} with 6"
    assert page.count("1 / 3") == 6  # each batch: the one reviewed sample done of three


def test_home_page_counts_each_rounds_reviews_apart(project: Project, alice: Any, bob: Any) -> None:
    from annotate.services.projects import batch_progress

    (batch,) = add_batches(project, 1, [alice, bob], submitted=True)
    first, second, third = batch.samples.order_by("position")
    Assignment.objects.create(batch=batch, annotator=alice, round=2)
    SampleReview.objects.create(sample=second, annotator=alice, round=2, done=True)
    SampleReview.objects.create(sample=third, annotator=alice, round=2, done=False)
    SampleReview.objects.create(sample=first, annotator=bob, round=2, done=True)  # bob's: not alice's
    rows = {row["round"]: (row["done"], row["next_sample_id"]) for row in batch_progress(alice)}
    # Round 1 is submitted: unreviewed samples count as done. Round 2: only alice's own done review counts.
    assert rows == {1: (3, None), 2: (1, first.pk)}
