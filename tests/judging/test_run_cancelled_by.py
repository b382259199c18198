"""Who cancelled a judge run and when are columns of the run (cancelled_by, cancelled_at), set by the cancel and read by
the run's line (its page, the judges page) and the API; before, the pages read the user back from the error's text
("Cancelled by <user> at <time>."). Migration 0006 reads that text once for runs cancelled before it."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Membership, Project
from judging.models import JudgeRun
from judging.services import runs
from tests.conftest import login, make_user
from tests.judging.run_factories import add_samples, closed_port_url
from tests.judging.test_run_cancel import queued_run, rubric_judge, run_url
from tests.migrations import migrate, migrate_to_latest

LINE = re.compile(r'data-role="run-cancelled">(.*?)</span>')


def cancelled_line(html: str) -> str:
    found = LINE.search(html)
    assert found, "no cancelled line"
    return found.group(1)


def api_run(client: Any, run: JudgeRun) -> dict[str, Any]:
    return client.get(f"/api/judge-runs/{run.pk}/").json()


@pytest.mark.django_db
def test_the_canceller_is_read_from_the_run_not_from_its_error_text(project: Project, admin_user: Any) -> None:
    add_samples(project, 2)
    run = queued_run(project, rubric_judge(project, closed_port_url()))
    runs.cancel_run(run, admin_user)
    stored = JudgeRun.objects.get(pk=run.pk)
    assert (stored.cancelled_by, stored.cancelled_at) == (admin_user, stored.finished_at)
    # The error's words are for people: another name there changes nothing of who cancelled it.
    JudgeRun.objects.filter(pk=run.pk).update(error="Cancelled by mallory at 2025-06-01 22:35:08 UTC.")
    admin = login(admin_user)
    for html in (admin.get(run_url(run)).content.decode(), admin.get("/projects/demo/judges/").content.decode()):
        assert re.fullmatch(r"Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.", cancelled_line(html))
    body = api_run(admin, run)
    assert (body["status_label"], body["cancelled_by"]) == ("Cancelled", "adam")
    assert body["cancelled_at"] == body["finished_at"] is not None


@pytest.mark.django_db
def test_a_run_whose_canceller_was_deleted_still_reads_cancelled(project: Project, admin_user: Any) -> None:
    add_samples(project, 2)
    zed = make_user("zed")
    Membership.objects.create(project=project, user=zed, role=Membership.Role.ADMIN)
    run = queued_run(project, rubric_judge(project, closed_port_url()))
    runs.cancel_run(run, zed)
    zed.delete()
    stored = JudgeRun.objects.get(pk=run.pk)
    assert (stored.cancelled_by, stored.cancelled, stored.status_label) == (None, True, "Cancelled")
    admin = login(admin_user)
    assert cancelled_line(admin.get(run_url(run)).content.decode()).startswith("Cancelled by a deleted user at ")
    body = api_run(admin, run)
    assert (body["status_label"], body["cancelled_by"], body["cancelled_at"] is not None) == ("Cancelled", None, True)


@pytest.mark.django_db
def test_a_run_that_failed_on_its_own_is_not_cancelled(project: Project, admin_user: Any) -> None:
    add_samples(project, 2)
    run = queued_run(project, rubric_judge(project, closed_port_url()))
    # An endpoint's message that happens to read like a cancel: the run was not cancelled by anyone here.
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.FAILED,
                                              error="Cancelled by upstream at 2025-06-01 22:35:08 UTC.")
    stored = JudgeRun.objects.get(pk=run.pk)
    assert (stored.cancelled, stored.status_label, stored.canceller_name) == (False, "Failed", "")
    body = api_run(login(admin_user), run)
    assert (body["status_label"], body["cancelled_by"], body["cancelled_at"]) == ("Failed", None, None)
    assert 'data-role="run-cancelled"' not in login(admin_user).get(run_url(run)).content.decode()


BEFORE = [("judging", "0005_audit_blind_score")]
AFTER = [("judging", "0006_blind_scores_run_cancelled_by")]


@pytest.mark.django_db(transaction=True)
def test_migration_0006_reads_who_cancelled_older_runs_from_their_error_text() -> None:
    old = migrate(BEFORE)
    try:
        adam = old.get_model("auth", "User").objects.create(username="adam")
        project = old.get_model("annotate", "Project").objects.create(name="P", slug="p")
        judge = old.get_model("judging", "Judge").objects.create(project=project, name="j", kind="rubric")
        run_model = old.get_model("judging", "JudgeRun")
        ended = timezone.now()
        made = {
            name: run_model.objects.create(project=project, judge=judge, status=status, error=error,
                                           finished_at=ended).pk
            for name, status, error in [
                ("by adam", "failed", "Cancelled by adam at 2025-06-01 22:35:08 UTC."),
                ("by a user deleted since", "failed", "Cancelled by ghost at 2025-06-01 22:35:08 UTC."),
                ("failed", "failed", "The model is not served."),
                ("done", "done", ""),
            ]
        }

        new = migrate(AFTER)
        stored = {name: new.get_model("judging", "JudgeRun").objects.get(pk=pk) for name, pk in made.items()}
        assert (stored["by adam"].cancelled_by_id, stored["by adam"].cancelled_at) == (adam.pk, ended)
        ghost = stored["by a user deleted since"]
        assert (ghost.cancelled_by_id, ghost.cancelled_at) == (None, ended)
        for name in ("failed", "done"):
            assert (stored[name].cancelled_by_id, stored[name].cancelled_at) == (None, None)
    finally:
        migrate_to_latest()
