"""A synthetic set's page lists each judge's latest run over the set as the project's run line (judging/_run.html):
a cancelled run reads "Cancelled by <user> at <time>", and a queued or running run has the run page's Cancel (the
same endpoint, service and admins), whose htmx answer reloads the page it is on, the set's. Before, the list read
the stored status, "failed" for a cancelled run, and offered no Cancel. Runs stay queued here: the tests run in a
transaction, so the on-commit send never fires.
"""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Membership, Project
from judging.models import Judge, JudgeRun, SyntheticSet
from judging.services import runs
from tests.conftest import login, make_user
from tests.judging.run_factories import closed_port_url
from tests.judging.test_api_judge_figures import tables_url
from tests.judging.test_run_cancel import run_url
from tests.judging.test_synthetic_pages import judged_set, set_url

__all__ = ["judged_set"]  # the fixture, used by name

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
CANCELLED = re.compile(r'data-role="run-cancelled">Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.<')
CANCEL_FORM = 'data-role="cancel-run-form"'


def queued_run(synthetic_set: SyntheticSet, by: Any) -> JudgeRun:
    """A run of a second judge over the set, queued (nothing listens at its endpoint: no worker runs it here)."""
    judge = Judge.objects.create(project=synthetic_set.project, name="queued-judge", kind=Judge.Kind.RUBRIC,
                                 base_url=closed_port_url(), model="m", max_retries=0)
    return runs.start_run(synthetic_set.project, judge, scope="synthetic", synthetic_set=synthetic_set, by=by)


def run_line(html: str, run: JudgeRun) -> str:
    """The run's line on a page (its element up to the next run's, or the end of its list)."""
    start = html.index(f'id="run-{run.pk}"')
    ends = [found for found in (html.find('<div class="job run-progress"', start), html.find("</section>", start))
            if found != -1]
    return html[start:min(ends)]


def cancel_form_of(line: str) -> str:
    found = re.search(r'<form method="post" action="([^"]+)" hx-post="([^"]+)"[^>]*data-role="cancel-run-form"', line)
    assert found, "no Cancel on the run's line"
    assert found.group(1) == found.group(2)
    return found.group(1)


def test_a_cancelled_run_over_the_set_reads_cancelled_by_whom_not_failed(
    judged_set: SyntheticSet, admin_user: Any
) -> None:
    run = queued_run(judged_set, admin_user)
    runs.cancel_run(run, admin_user)
    line = run_line(login(admin_user).get(set_url(judged_set)).content.decode(), run)
    assert CANCELLED.search(line)
    assert re.search(r'data-role="run-status"[^>]*>Cancelled<', line)
    assert ">failed<" not in line.lower() and CANCEL_FORM not in line


def test_a_queued_run_is_cancelled_from_the_set_page_with_the_run_page_s_cancel_and_comes_back_to_the_set(
    judged_set: SyntheticSet, admin_user: Any
) -> None:
    run = queued_run(judged_set, admin_user)
    done = JudgeRun.objects.exclude(pk=run.pk).get(synthetic_set=judged_set)
    admin = login(admin_user)
    page = admin.get(set_url(judged_set)).content.decode()
    # The run page's Cancel: the same endpoint (judging-run-cancel, judging.services.runs.cancel_run).
    action = cancel_form_of(run_line(page, run))
    assert action == run_url(run, "cancel/") == cancel_form_of(run_line(admin.get(run_url(run)).content.decode(), run))
    assert 'data-role="run-status"' in run_line(page, run) and ">Queued<" in run_line(page, run)
    # A run that has ended offers none.
    assert CANCEL_FORM not in run_line(page, done) and re.search(r'data-role="run-status"[^>]*>Done<',
                                                                   run_line(page, done))

    # The form posts by htmx from the set's page: the answer reloads the page it is on, the set's.
    answer = admin.post(action, **HTMX, HTTP_REFERER=f"http://testserver{set_url(judged_set)}")
    assert answer.status_code == 200 and answer["HX-Refresh"] == "true"
    stored = JudgeRun.objects.get(pk=run.pk)
    assert (stored.status, stored.cancelled_by, stored.status_label) == (JudgeRun.Status.FAILED, admin_user,
                                                                         "Cancelled")
    again = admin.get(set_url(judged_set)).content.decode()
    assert f"Run {run.pk} is cancelled" in again  # the cancel's message, on the set's page
    line = run_line(again, run)
    assert CANCELLED.search(line) and CANCEL_FORM not in line


@pytest.mark.parametrize(("role", "refused"), [(Membership.Role.ANNOTATOR, 403), (Membership.Role.AUDITOR, 403),
                                               (None, 404)])
def test_who_may_cancel_a_run_over_the_set_is_who_may_on_the_run_page(
    project: Project, judged_set: SyntheticSet, admin_user: Any, role: str | None, refused: int
) -> None:
    run = queued_run(judged_set, admin_user)
    user = make_user("someone")
    if role is not None:
        Membership.objects.create(project=project, user=user, role=role)
    client = login(user)
    for url in (set_url(judged_set), run_url(run)):
        assert client.get(url).status_code == refused
    assert client.post(run_url(run, "cancel/"), **HTMX).status_code == refused
    assert JudgeRun.objects.get(pk=run.pk).status == JudgeRun.Status.QUEUED


def test_the_set_tables_api_and_judge_tables_json_say_a_run_was_cancelled_and_by_whom(
    judged_set: SyntheticSet, admin_user: Any
) -> None:
    run = queued_run(judged_set, admin_user)
    runs.cancel_run(run, admin_user)
    run.refresh_from_db()
    answer = login(admin_user).get(tables_url(judged_set))
    assert answer.status_code == 200
    printed = StringIO()
    call_command("judge_tables", "--project", judged_set.project.slug, "--set", judged_set.name, "--json",
                 stdout=printed)
    run_api = login(admin_user).get(f"/api/judge-runs/{run.pk}/").json()
    for listed in (answer.json()["runs"], json.loads(printed.getvalue())["runs"]):
        row = next(row for row in listed if row["run"] == run.pk)
        # Stored as failed, as every status filter expects; the label and the canceller say what happened.
        assert (row["status"], row["status_label"], row["cancelled_by"]) == ("failed", "Cancelled", "adam")
        assert row["cancelled_at"] == run_api["cancelled_at"] and row["cancelled_at"] is not None
        done = next(row for row in listed if row["run"] != run.pk)
        assert (done["status_label"], done["cancelled_by"], done["cancelled_at"]) == ("Done", None, None)
