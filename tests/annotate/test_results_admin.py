"""Smaller fixes on the results and agreement pages: batches from a selection made once, annotators with
very few spans marked, and generator names readable in the chart."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connections

from annotate.models import Assignment, Batch, Membership, Passage, Sample, SpanAnnotation
from annotate.services import agreement_admin
from annotate.views.agreement import few_spans, mark_few_spans
from annotate.views.results import chart_labels
from tests.conftest import login, make_user, needs_postgres

HTMX = {"HTTP_HX_REQUEST": "true"}
SELECTION = {"k": "2", "threshold": "0.5", "name_prefix": "hard", "passages_per_batch": "1"}


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    cache.clear()  # the figures cache is keyed by project id, and ids repeat between tests


def span(sample: Sample, user: Any, start: int = 0, end: int = 10, labels: list[str] | None = None) -> None:
    SpanAnnotation.objects.create(sample=sample, annotator=user, round=1, start=start, end=end,
                                  text=sample.summary[start:end], labels=labels or ["Benign"])


@pytest.fixture
def submitted(batch: Batch) -> Batch:
    """conftest's batch-1, submitted by alice and bob, with two detectors that disagree on s0 and s2."""
    Assignment.objects.filter(batch=batch).update(status=Assignment.Status.SUBMITTED)
    for sample, hhem, gpt in zip(batch.samples.order_by("position"), (0.2, 0.8, 0.9), (1, 1, 0), strict=True):
        sample.metadata = {"summarizer": sample.generator, "hhem": hhem, "gpt": gpt}
        sample.save()
    return batch


# --------------------------------------------------------------------------- batches from the selection, once


@pytest.mark.django_db
def test_pressing_create_batches_twice_makes_them_once_and_says_they_exist(
    submitted: Batch, admin_user: Any
) -> None:
    client = login(admin_user)
    first = client.post("/projects/demo/results/selection/", SELECTION, follow=True)
    assert "Created 1 batch (hard-1) with 3 copied samples" in first.content.decode()
    batches, samples = list(Batch.objects.values_list("pk", "name")), list(Sample.objects.values_list("pk", flat=True))
    again = client.post("/projects/demo/results/selection/", SELECTION)
    assert again.status_code == 302 and again["Location"] == "/projects/demo/"
    page = client.get("/projects/demo/").content.decode()
    assert "This batch already exists: 1 batch (hard-1) from this selection; nothing new was created." in page
    # A double submit from htmx gets the same answer.
    double = client.post("/projects/demo/results/selection/", SELECTION, **HTMX)
    assert double["HX-Redirect"] == "/projects/demo/"
    assert list(Batch.objects.values_list("pk", "name")) == batches
    assert list(Sample.objects.values_list("pk", flat=True)) == samples


@pytest.mark.django_db
def test_the_same_prefix_for_another_selection_is_still_refused(submitted: Batch) -> None:
    project = submitted.project
    first = submitted.samples.first().passage_id
    other = Passage.objects.create(project=project, external_id="p2", text="Another source.")
    Sample.objects.create(project=project, passage=other, batch=submitted, position=9, summary="Other.")
    agreement_admin.create_batches_from_selection(project, [first], "hard")
    with pytest.raises(agreement_admin.AgreementAdminError) as refused:
        agreement_admin.create_batches_from_selection(project, [other.pk], "hard")
    assert not isinstance(refused.value, agreement_admin.SelectionAlreadyMade)
    assert str(refused.value) == "name_prefix: batch 'hard-1' already exists; choose another prefix"
    # More batches than were made: a different selection too.
    with pytest.raises(agreement_admin.AgreementAdminError, match="choose another prefix"):
        agreement_admin.create_batches_from_selection(project, [first, other.pk], "hard", passages_per_batch=1)
    made = agreement_admin.create_batches_from_selection
    with pytest.raises(agreement_admin.SelectionAlreadyMade) as again:
        made(project, [first], "hard")
    assert [batch.name for batch in again.value.batches] == ["hard-1"]


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_submits_at_the_same_moment_make_the_batches_once(batch: Batch) -> None:
    project, passage_id = batch.project, batch.samples.first().passage_id
    start = threading.Barrier(2)
    outcomes: list[str] = []

    def submit() -> None:
        try:
            start.wait()
            agreement_admin.create_batches_from_selection(project, [passage_id], "race")
            outcomes.append("created")
        except agreement_admin.SelectionAlreadyMade:
            outcomes.append("exists")
        except Exception as error:  # any other outcome fails the test below
            outcomes.append(repr(error))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["created", "exists"]
    assert list(Batch.objects.filter(name__startswith="race").values_list("name", flat=True)) == ["race-1"]


# --------------------------------------------------------------------------- few spans on the agreement page


def test_few_spans_means_under_three_spans_or_spans_on_under_a_tenth_of_the_samples() -> None:
    assert few_spans(2, 2, 3) and not few_spans(3, 3, 3)
    assert few_spans(5, 1, 20)  # 5% of the samples
    assert not few_spans(5, 2, 20)  # 10%
    assert few_spans(0, 0, 0)


def test_nobody_is_marked_when_everyone_has_few_spans() -> None:
    people = [{"spans": 1, "samples_with_spans": 1}, {"spans": 0, "samples_with_spans": 0}]
    mark_few_spans(people, 30)
    assert [person["few"] for person in people] == [False, False]
    people.append({"spans": 12, "samples_with_spans": 9})
    mark_few_spans(people, 30)
    assert [person["few"] for person in people] == [True, True, False]


@pytest.mark.django_db
def test_agreement_page_marks_an_annotator_with_very_few_spans(
    submitted: Batch, admin_user: Any, alice: Any, bob: Any
) -> None:
    s0, s1, s2 = submitted.samples.order_by("position")
    for sample in (s0, s1, s2):
        span(sample, alice, 0, 5, ["Unwanted"])
    span(s0, alice, 6, 12)
    span(s1, bob, 0, 5)  # bob: one span in three samples
    carol = make_user("carol")
    Membership.objects.create(project=submitted.project, user=carol, role=Membership.Role.ANNOTATOR)
    Assignment.objects.create(batch=submitted, annotator=carol, status=Assignment.Status.SUBMITTED)  # no span
    html = login(admin_user).get("/projects/demo/agreement/").content.decode()
    people = {
        name: attrs
        for attrs, name in re.findall(r'<span class="person[^"]*"([^>]*)>([a-z]+)', html)
    }
    assert set(people) == {"alice", "bob", "carol"}
    assert 'data-few-spans="true"' in people["bob"] and 'data-spans="1"' in people["bob"]
    assert 'data-few-spans="true"' in people["carol"] and 'data-spans="0"' in people["carol"]
    assert "data-few-spans" not in people["alice"] and 'data-spans="4"' in people["alice"]
    assert 'title="1 span on 1 of 3 samples">few spans</span>' in html
    assert "fewer than\n      3 spans in the batch, or spans on fewer than 10% of its samples" in html
    # The exclusion is still the admin's call: bob's button is there.
    assert html.count('name="excluded" value="1"') == 3


# --------------------------------------------------------------------------- the chart's generator names


def test_chart_labels_drop_the_organisation_and_cut_long_names_in_the_middle() -> None:
    labels = chart_labels([
        "meta-llama/Meta-Llama-3.1-70B-Instruct", "openai/gpt-4o", "a/model", "b/model",
        "mistralai/Mixtral-8x22B-Instruct-v0.1-extra-long-name", "plain",
    ])
    assert labels == {
        "meta-llama/Meta-Llama-3.1-70B-Instruct": "Meta-Llama-3.1-70B-Instruct",
        "openai/gpt-4o": "gpt-4o",
        "a/model": "a/model",  # "model" twice: the organisation tells them apart
        "b/model": "b/model",
        "mistralai/Mixtral-8x22B-Instruct-v0.1-extra-long-name": "Mixtral-8x22B-Inst…long-name",
        "plain": "plain",
    }
    assert all(len(label) <= 28 for label in labels.values())


@pytest.mark.django_db
def test_results_chart_shows_short_labels_with_the_full_name_on_hover(
    submitted: Batch, admin_user: Any, alice: Any
) -> None:
    long_names = ["meta-llama/Meta-Llama-3.1-70B-Instruct", "mistralai/Mixtral-8x22B-Instruct-v0.1-extra-long-name",
                  "openai/gpt-4o"]
    for sample, generator in zip(submitted.samples.order_by("position"), long_names, strict=True):
        Sample.objects.filter(pk=sample.pk).update(generator=generator)
    span(submitted.samples.first(), alice, 0, 5, ["Unwanted"])
    html = login(admin_user).get("/projects/demo/results/").content.decode()
    chart = html[html.index('data-role="worst-label-chart"'):html.index("</svg>")]
    labels = dict(re.findall(r'data-role="generator-label"><title>([^<]+)</title>([^<]+)</text>', chart))
    assert labels == {
        "meta-llama/Meta-Llama-3.1-70B-Instruct": "Meta-Llama-3.1-70B-Instruct",
        "mistralai/Mixtral-8x22B-Instruct-v0.1-extra-long-name": "Mixtral-8x22B-Inst…long-name",
        "openai/gpt-4o": "gpt-4o",
    }
