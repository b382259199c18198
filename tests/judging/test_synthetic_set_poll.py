"""Two mends of the synthetic set page from a review walk.

1. Resume of a set made long ago said at once "No worker may be running … Or cancel the job.": its wait counted
   from ``created_at``; it now counts from when the set was last queued (SyntheticSet.queued_at).
2. The page went stale while its progress polled: "32 / 104 · Running" beside "0 rewrites written", and after Done
   the old counts and "Run this judge over the 26 items" until a reload. The poll from the set's page now brings the
   summary card out of band, and once the set is done a link to the items and tables.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from annotate.services.jobs import job_wait
from judging.models import SyntheticSet
from judging.services.synthetic import cancel_synthetic_set
from tests.judging.synthetic_scene import add_outputs
from tests.judging.test_synthetic_cancel import HTMX, notice_in, queued_set, set_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def outputs(project):
    return add_outputs(project)


def test_a_set_resumed_long_after_it_was_made_is_not_said_to_have_no_worker(project, outputs, admin_user,
                                                                           client_for):
    synthetic_set = queued_set(project, minutes_ago=30)
    assert job_wait(synthetic_set).no_worker  # queued 30 minutes with nobody writing it: the notice is right
    cancel_synthetic_set(synthetic_set, admin_user)
    client = client_for(admin_user)
    client.post(set_url(synthetic_set, "resume/"))
    synthetic_set.refresh_from_db()
    assert synthetic_set.status == SyntheticSet.Status.QUEUED
    wait = job_wait(synthetic_set)
    assert not wait.no_worker and wait.seconds < 30
    assert notice_in(client.get(set_url(synthetic_set)).content.decode()) is None
    assert notice_in(client.get(set_url(synthetic_set) + "?on=page", **HTMX).content.decode()) is None
    # Still queued a minute after the Resume: now the notice is right again.
    assert job_wait(synthetic_set, now=timezone.now() + timedelta(minutes=2)).no_worker


def test_a_new_set_still_counts_from_its_creation(project, outputs):
    synthetic_set = queued_set(project, minutes_ago=5)
    assert synthetic_set.queued_at is None and job_wait(synthetic_set).since == synthetic_set.created_at
    assert job_wait(synthetic_set).no_worker


def test_the_poll_from_the_set_page_brings_the_summary_along(project, outputs, admin_user, client_for):
    synthetic_set = queued_set(project)
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(status="running", done=4)
    client = client_for(admin_user)
    page = client.get(set_url(synthetic_set)).content.decode()
    assert f'hx-get="{set_url(synthetic_set)}?on=page"' in page
    fragment = client.get(set_url(synthetic_set) + "?on=page", **HTMX).content.decode()
    assert "<html" not in fragment
    assert f"4 / {synthetic_set.total} · Running" in fragment
    assert f'id="set-{synthetic_set.pk}-summary" data-role="set-summary" hx-swap-oob="true"' in fragment
    assert 'data-role="rewrites"' in fragment
    assert f'hx-get="{set_url(synthetic_set)}?on=page"' in fragment  # it goes on polling from the set page


def test_once_the_set_has_ended_the_poll_offers_the_items_without_reloading_the_live_region(
    project, outputs, admin_user, client_for
):
    synthetic_set = queued_set(project)
    client = client_for(admin_user)
    for status, link in (("done", True), ("failed", False)):
        SyntheticSet.objects.filter(pk=synthetic_set.pk).update(status=status)
        response = client.get(set_url(synthetic_set) + "?on=page", **HTMX)
        body = response.content.decode()
        assert response.status_code == 200 and "HX-Refresh" not in response.headers
        assert ('data-role="show-items"' in body) is link and 'hx-swap-oob="true"' in body
        assert "hx-get" not in body.split("set-summary")[0]  # the poll stopped
    # The sets list polls without ?on=page: its row is swapped to the end as before, no refresh, no summary.
    response = client.get(set_url(synthetic_set), **HTMX)
    assert "HX-Refresh" not in response.headers
    assert 'data-role="set-summary"' not in response.content.decode()
    assert "hx-get" not in response.content.decode()
