"""Who cancelled a synthetic set and when are columns of the set (cancelled_by, cancelled_at), as a judge run's are: set
by the cancel, cleared by Resume, read by the set's line (its page, the sets list), the sets API, the refusal of a
second cancel and ``synthetic_summary`` (``synthetic_set --json``). Before, all of them read the user and the time
back from the "Cancelled by <user> at <time>." line of the set's notes, which stays for people. Migration 0007 reads
that line once for sets cancelled before it."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotate.models import Membership, Project
from annotate.services.jobs import CancelRefused
from judging.models import SyntheticSet
from judging.services.synthetic import cancel_synthetic_set, resume_synthetic_set, synthetic_summary
from tests.conftest import login, make_user
from tests.judging.synthetic_scene import add_outputs
from tests.judging.test_synthetic_cancel import SKIPPED, queued_set, set_url
from tests.migrations import migrate, migrate_to_latest

LINE = re.compile(r'data-role="set-cancelled">(.*?)</span>')
WHEN = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"
SETS_API = "/api/projects/demo/synthetic-sets/"


@pytest.fixture
def outputs(project: Project) -> Any:
    return add_outputs(project)  # g1 and g2 of five sentences, g3 of three (skipped, named in the notes)


def cancelled_lines(html: str) -> list[str]:
    return LINE.findall(html)


def api_row(client: Any, synthetic_set: SyntheticSet) -> dict[str, Any]:
    (row,) = [row for row in client.get(SETS_API).json() if row["id"] == synthetic_set.pk]
    return row


def columns(synthetic_set: SyntheticSet) -> tuple[int | None, datetime | None]:
    stored = SyntheticSet.objects.filter(pk=synthetic_set.pk).values("cancelled_by", "cancelled_at").get()
    return stored["cancelled_by"], stored["cancelled_at"]


@pytest.mark.django_db
def test_the_cancel_stores_who_and_when_and_every_surface_reads_them_not_the_notes(
    project: Project, outputs: Any, admin_user: Any
) -> None:
    synthetic_set = cancel_synthetic_set(queued_set(project), admin_user)
    who, when = columns(synthetic_set)
    assert who == admin_user.pk and abs(when - timezone.now()) < timedelta(minutes=1)
    assert (synthetic_set.cancelled_by, synthetic_set.cancelled_at) == (admin_user, when)  # the object passed in too
    # The line stays in the notes, for people; another name there changes nothing of who cancelled it.
    assert re.fullmatch(rf"Cancelled by adam at {WHEN}\.", synthetic_set.error.splitlines()[-1])
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(
        error=f"{SKIPPED}\nCancelled by mallory at 2025-06-01 22:35:08 UTC.")
    said = f"Cancelled by adam at {timezone.localtime(when):%Y-%m-%d %H:%M:%S %Z}."
    admin = login(admin_user)
    for url in (set_url(synthetic_set), "/projects/demo/synthetic/"):
        html = admin.get(url).content.decode()
        assert cancelled_lines(html) == [said]
    assert '<p class="muted" data-role="set-note">Cancelled' not in admin.get(set_url(synthetic_set)).content.decode()

    row = api_row(admin, synthetic_set)
    assert (row["status"], row["status_label"], row["cancelled_by"]) == ("failed", "Cancelled", "adam")
    assert parse_datetime(row["cancelled_at"]) == when
    refused = admin.post(f"/api/projects/demo/synthetic-sets/{synthetic_set.pk}/cancel/")
    assert refused.status_code == 409
    assert refused.json()["detail"].startswith(f"Set {synthetic_set.pk} was already cancelled by adam at ")

    summary = synthetic_summary(SyntheticSet.objects.get(pk=synthetic_set.pk))
    assert (summary["status_label"], summary["cancelled_by"]) == ("Cancelled", "adam")
    assert datetime.fromisoformat(summary["cancelled_at"]) == when


@pytest.mark.django_db
def test_the_api_cancel_answers_with_who_and_when_and_a_set_never_cancelled_has_both_null(
    project: Project, outputs: Any, admin_user: Any
) -> None:
    synthetic_set = queued_set(project)
    admin = login(admin_user)
    row = api_row(admin, synthetic_set)
    assert (row["status_label"], row["cancelled_by"], row["cancelled_at"]) == ("Queued", None, None)
    summary = synthetic_summary(synthetic_set)
    assert (summary["cancelled_by"], summary["cancelled_at"]) == (None, None)
    body = admin.post(f"/api/projects/demo/synthetic-sets/{synthetic_set.pk}/cancel/").json()
    assert (body["status_label"], body["cancelled_by"]) == ("Cancelled", "adam")
    assert parse_datetime(body["cancelled_at"]) == columns(synthetic_set)[1]
    schema = admin.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    fields = schema["components"]["schemas"]["SyntheticSetRow"]["properties"]
    assert fields["cancelled_at"]["format"] == "date-time" and fields["cancelled_at"]["nullable"] is True
    assert fields["cancelled_by"]["nullable"] is True


@pytest.mark.django_db
def test_resume_clears_who_and_when_so_the_set_reads_cancelled_no_more(
    project: Project, outputs: Any, admin_user: Any
) -> None:
    synthetic_set = cancel_synthetic_set(queued_set(project), admin_user)
    resumed = resume_synthetic_set(synthetic_set)
    assert (resumed.status, resumed.error, resumed.cancelled_by, resumed.cancelled_at) == ("queued", SKIPPED, None,
                                                                                           None)
    assert columns(synthetic_set) == (None, None)
    # Failing on its own later is a failure, not the old cancel.
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(status=SyntheticSet.Status.FAILED,
                                                            error=f"{SKIPPED}\nStopped: ConnectionError: refused.")
    stored = SyntheticSet.objects.get(pk=synthetic_set.pk)
    assert (stored.cancelled, stored.status_label, stored.canceller_name, stored.cancel_note) == (
        False, "Failed", "", None)
    admin = login(admin_user)
    assert cancelled_lines(admin.get(set_url(synthetic_set)).content.decode()) == []
    assert (api_row(admin, synthetic_set)["cancelled_by"], api_row(admin, synthetic_set)["cancelled_at"]) == (None,
                                                                                                              None)


@pytest.mark.django_db
def test_a_set_whose_canceller_was_deleted_still_reads_cancelled(
    project: Project, outputs: Any, admin_user: Any
) -> None:
    zed = make_user("zed")
    Membership.objects.create(project=project, user=zed, role=Membership.Role.ADMIN)
    synthetic_set = cancel_synthetic_set(queued_set(project), zed)
    zed.delete()
    stored = SyntheticSet.objects.get(pk=synthetic_set.pk)
    assert (stored.cancelled_by, stored.cancelled, stored.status_label) == (None, True, "Cancelled")
    assert stored.cancelled_at is not None
    admin = login(admin_user)
    (line,) = cancelled_lines(admin.get(set_url(synthetic_set)).content.decode())
    assert re.fullmatch(rf"Cancelled by a deleted user at {WHEN}\.", line)
    row = api_row(admin, synthetic_set)
    assert (row["status_label"], row["cancelled_by"], row["cancelled_at"] is not None) == ("Cancelled", None, True)
    summary = synthetic_summary(stored)
    assert (summary["status_label"], summary["cancelled_by"], summary["cancelled_at"] is not None) == (
        "Cancelled", None, True)
    # A second cancel is refused as one of a cancelled set, not of a failed one.
    with pytest.raises(CancelRefused) as refusal:
        cancel_synthetic_set(stored, admin_user)
    assert str(refusal.value).startswith(f"Set {stored.pk} was already cancelled by a deleted user at ")


@pytest.mark.django_db
def test_a_set_that_failed_with_words_like_a_cancel_is_not_cancelled(
    project: Project, outputs: Any, admin_user: Any
) -> None:
    synthetic_set = queued_set(project)
    # An endpoint's message that happens to read like a cancel: nobody here cancelled the set.
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(
        status=SyntheticSet.Status.FAILED, error=f"{SKIPPED}\nCancelled by upstream at 2025-06-01 22:35:08 UTC.")
    stored = SyntheticSet.objects.get(pk=synthetic_set.pk)
    assert (stored.cancelled, stored.status_label, stored.canceller_name, stored.cancel_note) == (
        False, "Failed", "", None)
    admin = login(admin_user)
    row = api_row(admin, synthetic_set)
    assert (row["status_label"], row["cancelled_by"], row["cancelled_at"]) == ("Failed", None, None)
    assert cancelled_lines(admin.get(set_url(synthetic_set)).content.decode()) == []


BEFORE = [("judging", "0006_blind_scores_run_cancelled_by")]
AFTER = [("judging", "0007_synthetic_set_cancelled_by")]


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.django_db(transaction=True)
def test_migration_0007_reads_who_cancelled_older_sets_and_when_from_their_notes(settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Paris"  # the zone the older lines were written in
    old = migrate(BEFORE)
    try:
        adam = old.get_model("auth", "User").objects.create(username="adam")
        project = old.get_model("annotate", "Project").objects.create(name="P", slug="p")
        set_model = old.get_model("judging", "SyntheticSet")
        rows = [
            # name, status, notes, expected canceller, expected moment (UTC)
            ("by adam", "failed", f"{SKIPPED}\nCancelled by adam at 2025-06-01 22:35:08 CEST.", adam.pk,
             utc("2025-06-01 20:35:08")),
            ("by a user deleted since", "failed", "Cancelled by ghost at 2025-01-15 10:00:00 CET.", None,
             utc("2025-01-15 09:00:00")),
            # The hour the clock goes back is written twice: its zone's name says which.
            ("first 02:30", "failed", "Cancelled by adam at 2025-10-26 02:30:00 CEST.", adam.pk,
             utc("2025-10-26 00:30:00")),
            ("second 02:30", "failed", "Cancelled by adam at 2025-10-26 02:30:00 CET.", adam.pk,
             utc("2025-10-26 01:30:00")),
            ("in UTC", "failed", "Cancelled by adam at 2025-06-01 22:35:08 UTC.", adam.pk, utc("2025-06-01 22:35:08")),
            # Written before the install moved to Paris: every zone named EST is five hours behind UTC.
            ("in another zone", "failed", "Cancelled by adam at 2025-01-15 10:00:00 EST.", adam.pk,
             utc("2025-01-15 15:00:00")),
            ("failed", "failed", f"{SKIPPED}\nStopped: ConnectionError: refused.", None, None),
            ("a cancel's words, not last", "failed",
             "Cancelled by adam at 2025-06-01 22:35:08 CEST.\nStopped: ConnectionError: refused.", None, None),
            ("queued", "queued", SKIPPED, None, None),
            ("done", "done", "", None, None),
        ]
        made = {name: set_model.objects.create(project=project, name=name, status=status, error=notes).pk
                for name, status, notes, _, _ in rows}

        new = migrate(AFTER)
        for name, _, notes, who, when in rows:
            stored = new.get_model("judging", "SyntheticSet").objects.get(pk=made[name])
            assert (name, stored.cancelled_by_id, stored.cancelled_at) == (name, who, when)
            assert stored.error == notes  # the notes stay as they were
    finally:
        migrate_to_latest()
