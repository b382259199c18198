"""An imported annotator who later logs in sees their submitted batches as done on their home page too."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotate.models import Assignment, Batch, SampleReview
from annotate.services import members, progress, projects, spans
from tests.conftest import PASSWORD, login

pytestmark = pytest.mark.django_db


def logged_in_via_set_password_link(username: str) -> Client:
    user = get_user_model().objects.get(username=username)
    browser = Client()
    form_url = browser.get(members.set_password_path(user), follow=True).redirect_chain[-1][0]
    browser.post(form_url, {"new_password1": PASSWORD, "new_password2": PASSWORD})
    client = Client()
    assert client.login(username=username, password=PASSWORD)
    return client


def test_the_home_page_shows_an_imported_annotators_batch_as_done(imported: Batch, admin_user: Any) -> None:
    ana = logged_in_via_set_password_link("Ana")
    home = ana.get("/")
    assert home.status_code == 200
    [row] = home.context["work"]
    assert (row["done"], row["total"], row["percent"], row["next_sample_id"]) == (2, 2, 100, None)
    html = home.content.decode()
    assert '<progress max="2" value="2"></progress> 2 / 2' in html
    assert 'data-role="next-sample"' not in html and 'data-role="view-submitted"' in html
    # The project page says the same for Ana (the rule the home page now shares).
    overview = login(admin_user).get("/projects/fb/").context["batches"][0]["people"]
    assert {p["assignment"].annotator.username: p["done"] for p in overview} == {"Ana": 2, "Bo": 2}
    # And so does the sample page she opens from there.
    first = imported.samples.order_by("position").first()
    page = ana.get(f"/projects/fb/samples/{first.pk}/?round=1").context["page"]
    assert (page["done"], page["done_count"], page["total"]) == (True, 2, 2)


def test_native_progress_is_unchanged(batch: Batch, alice: Any) -> None:
    """A batch in progress counts only the samples marked done; 'mark not done' takes one back."""
    first, second, third = batch.samples.order_by("position")
    spans.mark_sample_done(first, alice, round=1, done=True)
    spans.mark_sample_done(second, alice, round=1, done=True)
    spans.mark_sample_done(second, alice, round=1, done=False)
    [row] = projects.batch_progress(alice)
    assert (row["done"], row["total"], row["next_sample_id"]) == (1, 3, second.pk)
    assert Assignment.objects.get(batch=batch, annotator=alice).status == Assignment.Status.ASSIGNED
    spans.mark_sample_done(second, alice, round=1, done=True)
    spans.mark_sample_done(third, alice, round=1, done=True)
    [row] = projects.batch_progress(alice)
    assert (row["done"], row["next_sample_id"]) == (3, None)
    assert SampleReview.objects.filter(annotator=alice, done=True).count() == 3


def test_the_rule_itself() -> None:
    assert progress.counts_as_done(None, submitted=True) is True  # imported: no review, submitted
    assert progress.counts_as_done(None, submitted=False) is False
    assert progress.counts_as_done(False, submitted=True) is False
    assert progress.counts_as_done(True, submitted=False) is True
    assert progress.done_samples([5, 3, 9], {3: True, 9: False}, submitted=True) == [5, 3]
    assert progress.done_samples([5, 3, 9], {3: True, 9: False}, submitted=False) == [3]
    assert progress.done_count(10, reviewed=0, reviewed_done=0, submitted=True) == 10
    assert progress.done_count(10, reviewed=4, reviewed_done=3, submitted=True) == 9
    assert progress.done_count(10, reviewed=4, reviewed_done=3, submitted=False) == 3
