"""The span project page says what its numbers count, labels its controls, and gives an annotator a way to their work.

Before: "0 / 36" (the embedding job: passages and summaries) beside "0 of 30 summaries"; a header promising
"done / samples" over cells reading "alice (r1): 0"; the round-2 names/pseudonyms select with no visible label; and
an annotator's project page with no Start or Continue link (only the home page had one).
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, Batch, Passage, Sample, SampleReview
from annotate.services import embedding
from tests.conftest import login
from tests.judging.audit_helpers import Element, read_html

pytestmark = pytest.mark.django_db


def project_page(user: Any) -> Element:
    response = login(user).get("/projects/demo/")
    assert response.status_code == 200
    return read_html(response.content)


def words(element: Element) -> str:
    return " ".join(element.text.split())


def test_the_embedding_job_says_what_it_counts_and_agrees_with_the_line_above(batch: Batch, admin_user: Any) -> None:
    job = embedding.queue_embedding(batch.project)  # queued on commit: no worker runs it here
    texts = Passage.objects.filter(project=batch.project).count() + Sample.objects.filter(project=batch.project).count()
    assert job.total == texts == 4
    page = project_page(admin_user)
    assert words(page.one("span", data_role="job-count")) == "0 of 4 texts (passages and summaries) · Queued"
    assert words(page.one("p", data_role="embedded")) == (
        "Sentences embedded for highlighting: 0 of 3 summaries and 0 of 1 passage."
    )


def test_the_annotators_column_shows_done_of_the_batchs_samples(batch: Batch, admin_user: Any, alice: Any) -> None:
    first = batch.samples.order_by("position").first()
    SampleReview.objects.create(sample=first, annotator=alice, round=1, done=True)
    page = project_page(admin_user)
    assert "Annotators (round: samples done / samples)" in [words(th) for th in page.find("th")]
    people = {words(person).split(" (")[0]: person for person in page.find("span", data_role="person")}
    assert set(people) == {"alice", "bob"}
    assert words(people["alice"]).startswith("alice (round 1): 1 / 3")
    assert words(people["bob"]).startswith("bob (round 1): 0 / 3")


def test_the_round_two_names_choice_has_a_visible_label(batch: Batch, admin_user: Any) -> None:
    Assignment.objects.filter(batch=batch).update(status=Assignment.Status.SUBMITTED)
    page = project_page(admin_user)
    labels = [label for label in page.find("label") if label.find("select", name="reveal")]
    assert len(labels) == 1
    select_text = words(labels[0].one("select", name="reveal"))
    label_text = words(labels[0]).replace(select_text, "").strip()
    assert label_text == "In round 2, annotators see each other as"
    assert [words(option) for option in labels[0].find("option")] == ["names", "pseudonyms"]


def work_links(page: Element) -> list[tuple[str, str]]:
    found = page.find("a", data_role="next-sample") + page.find("a", data_role="view-submitted")
    return sorted((words(link), link.attrs["href"]) for link in found)


def test_an_annotator_gets_start_and_continue_links_to_the_first_sample_not_done(
    project: Any, batch: Batch, alice: Any
) -> None:
    samples = list(batch.samples.order_by("position"))
    second = Batch.objects.create(project=project, name="batch-2", position=1)
    other = Sample.objects.create(project=project, passage=samples[0].passage, batch=second, position=0,
                                  external_id="b2-0", summary="Another summary.")
    Assignment.objects.create(batch=second, annotator=alice)
    SampleReview.objects.create(sample=samples[0], annotator=alice, round=1, done=True)
    expected = [
        ("Continue", f"/projects/demo/samples/{samples[1].pk}/?round=1"),
        ("Start", f"/projects/demo/samples/{other.pk}/?round=1"),
    ]
    page = project_page(alice)
    assert work_links(page) == expected
    # One link per assignment, in that assignment's cell; the same links as the home page's.
    cells = {row.attrs["data-batch"]: row for row in page.find("tr") if "data-batch" in row.attrs}
    assert [words(link) for link in cells[str(batch.pk)].find("a", data_role="next-sample")] == ["Continue"]
    assert [words(link) for link in cells[str(second.pk)].find("a", data_role="next-sample")] == ["Start"]
    assert work_links(read_html(login(alice).get("/").content)) == expected


def test_a_submitted_assignment_links_to_its_work_read_only(batch: Batch, alice: Any) -> None:
    Assignment.objects.filter(batch=batch, annotator=alice).update(status=Assignment.Status.SUBMITTED)
    first = batch.samples.order_by("position").first()
    assert work_links(project_page(alice)) == [("View", f"/projects/demo/samples/{first.pk}/?round=1")]


def test_an_admin_sees_no_annotators_links(batch: Batch, admin_user: Any) -> None:
    assert work_links(project_page(admin_user)) == []
