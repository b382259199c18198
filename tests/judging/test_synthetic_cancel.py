"""Cancelling a synthetic set (project admins), on its line and through the API: the way out of a set no worker
writes. Before, a set queued with no worker said "Queued" for good beside the no-worker notice, with no way to end it.

A cancelled set is failed, its notes ending "Cancelled by <user> at <time>."; a worker that picks it up later asks the
writer nothing, one writing it stops at its next progress write and keeps the rewrites it stored; Resume goes on from
there, asking only for what it lacks. Sets stay queued here: the tests run in a transaction, so the on-commit send
never fires.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Membership, Project
from annotate.services.jobs import CancelRefused
from judging.models import SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.synthetic import (
    cancel_synthetic_set,
    create_synthetic_set,
    execute_synthetic_set,
    import_rewrites,
    resume_synthetic_set,
    rewrite,
    synthetic_summary,
)
from tests.conftest import login, make_user
from tests.judging.llm_server import LoopbackLLM
from tests.judging.synthetic_scene import add_outputs, writer_judge, writer_script

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}
CANCELLED = re.compile(r"Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.")
NOTICE = re.compile(r'<p class="notice warn" data-role="no-worker">(.*?)</p>', re.S)
CANCEL_FORM = 'data-role="cancel-set-form"'
SKIPPED = "Skipped 1 of 3 outputs that do not have exactly 5 sentences: g3 has 3 sentences, not 5."
CLOSED_PORT = "http://127.0.0.1:9/v1"  # nothing listens there: a worker writing the set would fail every call


@pytest.fixture
def outputs(project: Project) -> Any:
    return add_outputs(project)  # g1 and g2 of five sentences, g3 of three (skipped, named in the notes)


def queued_set(project: Project, base_url: str = CLOSED_PORT, *, minutes_ago: int = 0, **writer: Any) -> SyntheticSet:
    synthetic_set = create_synthetic_set(project, name="s1", writer=writer_judge(project, base_url, **writer),
                                         queue=False)
    SyntheticSet.objects.filter(pk=synthetic_set.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    synthetic_set.refresh_from_db()
    return synthetic_set


def member(project: Project, name: str, role: str) -> Any:
    user = make_user(name)
    Membership.objects.create(project=project, user=user, role=role)
    return user


def notice_in(html: str) -> str | None:
    found = NOTICE.search(html)
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split()) if found else None


def set_url(synthetic_set: SyntheticSet, suffix: str = "") -> str:
    return f"/projects/{synthetic_set.project.slug}/synthetic/{synthetic_set.pk}/{suffix}"


def api_cancel_url(synthetic_set: SyntheticSet) -> str:
    return f"/api/projects/{synthetic_set.project.slug}/synthetic-sets/{synthetic_set.pk}/cancel/"


def progress_line(html: str, synthetic_set: SyntheticSet) -> str:
    line = html[html.index(f'id="synthetic-{synthetic_set.pk}" data-role="synthetic-progress"'):]
    return line[:line.index("</div>")]


# ----------------------------------------------------------------------------- the service


def test_a_queued_set_cancelled_is_failed_by_whom_and_a_worker_picking_it_up_later_asks_nothing(
    project: Project, outputs: Any, admin_user: Any
) -> None:
    with LoopbackLLM(script=writer_script()) as server:
        synthetic_set = queued_set(project, server.base_url)
        cancel_synthetic_set(synthetic_set, admin_user)
        assert synthetic_set.status == SyntheticSet.Status.FAILED
        synthetic_set.refresh_from_db()
        assert (synthetic_set.cancelled_by, synthetic_set.status_label) == (admin_user, "Cancelled")
        # Below the notes on the skipped output, which stay.
        notes = synthetic_set.error.splitlines()
        assert notes[0] == SKIPPED and CANCELLED.fullmatch(notes[1]) and len(notes) == 2
        assert abs(synthetic_set.cancelled_at - timezone.now()) < timedelta(minutes=1)
        after = execute_synthetic_set(synthetic_set.pk)  # the worker that starts at last
        assert server.chat_calls == 0
    assert after.status == SyntheticSet.Status.FAILED and after.cancelled_by == admin_user
    assert after.error == "\n".join(notes)
    assert not SyntheticRewrite.objects.filter(synthetic_set=synthetic_set).exists()
    assert SyntheticItem.objects.filter(synthetic_set=synthetic_set).count() == 2  # the gold items alone


def test_a_running_set_cancelled_stops_at_its_next_progress_write_keeping_its_rewrites_and_resume_goes_on(
    project: Project, outputs: Any, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = rewrite._record_progress
    writes: list[int] = []

    def cancel_after_three_answers(set_id: int, done: int) -> None:
        writes.append(done)
        if done == 3:  # the admin cancels while the set is written: the third answer was just stored
            cancel_synthetic_set(SyntheticSet.objects.get(pk=set_id), admin_user)
        record(set_id, done)

    # Answers that take a moment, as an LLM's do: the cancel comes long before the last call is sent.
    with LoopbackLLM(script=writer_script(), delay=0.05) as server:
        synthetic_set = queued_set(project, server.base_url, concurrency=2)
        monkeypatch.setattr(rewrite, "_record_progress", cancel_after_three_answers)
        stopped = execute_synthetic_set(synthetic_set.pk)
        monkeypatch.setattr(rewrite, "_record_progress", record)
        assert writes == [0, 1, 2, 3]  # it stopped at the write after the cancel
        assert stopped.status == SyntheticSet.Status.FAILED and stopped.cancelled_by == admin_user
        assert CANCELLED.fullmatch(stopped.error.splitlines()[-1])
        # It sent no call after that; what it stored stays, the answers of the calls then in flight included:
        # every call it paid for has its rewrite.
        kept = SyntheticRewrite.objects.filter(synthetic_set=synthetic_set).count()
        assert 3 <= kept == server.chat_calls == stopped.done < 20
        assert SyntheticItem.objects.filter(synthetic_set=synthetic_set).count() == 2  # no item built
        summary = synthetic_summary(stopped)
        assert summary["status_label"] == "Cancelled" and summary["notes"] == [SKIPPED, stopped.cancel_note]
        assert summary["not_built"] == {"intrinsic": None, "extrinsic": None}  # stopped, no rewrite failed

        # Resume: queued again without the cancel's line, and only the missing rewrites are asked for.
        resumed = resume_synthetic_set(stopped)
        assert (resumed.status, resumed.error, resumed.done, resumed.cancelled_by, resumed.cancelled_at) == (
            "queued", SKIPPED, kept, None, None)
        sent = server.chat_calls
        done = execute_synthetic_set(synthetic_set.pk)
        assert server.chat_calls - sent == 20 - kept
    assert (done.status, done.done, done.error) == (SyntheticSet.Status.DONE, 20, SKIPPED)
    assert SyntheticRewrite.objects.filter(synthetic_set=synthetic_set).count() == 20
    assert SyntheticItem.objects.filter(synthetic_set=synthetic_set).count() == 22


@pytest.mark.parametrize("ending", ["done", "failed", "cancelled", "imported"])
def test_a_set_that_has_ended_is_not_cancelled_and_the_refusal_says_how_it_ended(
    project: Project, outputs: Any, admin_user: Any, ending: str
) -> None:
    synthetic_set = queued_set(project)
    if ending == "done":
        SyntheticSet.objects.filter(pk=synthetic_set.pk).update(status=SyntheticSet.Status.DONE)
        words = f"Set {synthetic_set.pk} is done (0 of 20 rewrites written); there is nothing to cancel and nothing"
    elif ending == "failed":
        SyntheticSet.objects.filter(pk=synthetic_set.pk).update(
            status=SyntheticSet.Status.FAILED, error=f"{SKIPPED}\nStopped: ConnectionError: refused.")
        # The reason it stopped, not the notes above it.
        words = f"Set {synthetic_set.pk} has already failed (Stopped: ConnectionError: refused); nothing was changed."
    elif ending == "cancelled":
        cancel_synthetic_set(synthetic_set, admin_user)
        words = f"Set {synthetic_set.pk} was already cancelled by adam at "
    else:  # imported rewrites are done at once
        synthetic_set = import_rewrites(project, "imported", b'{"sample": "g1", "sentence": 0, "type": "intrinsic", '
                                        b'"rewritten": "The bridge never reopened."}', "rewrites.jsonl")
        words = f"Set {synthetic_set.pk} is done (1 of 1 rewrites written); there is nothing to cancel"
    before = SyntheticSet.objects.filter(pk=synthetic_set.pk).values().get()
    with pytest.raises(CancelRefused) as refusal:
        cancel_synthetic_set(SyntheticSet.objects.get(pk=synthetic_set.pk), admin_user)
    assert str(refusal.value).startswith(words)
    assert SyntheticSet.objects.filter(pk=synthetic_set.pk).values().get() == before


def test_the_cancel_time_is_shown_in_the_current_zone_from_the_column_even_once_the_zone_changed(
    project: Project, outputs: Any, admin_user: Any, settings: Any
) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    synthetic_set = cancel_synthetic_set(queued_set(project), admin_user)
    note = synthetic_set.error.splitlines()[-1]
    assert re.fullmatch(r"Cancelled by adam at \S+ \S+ CES?T\.", note)
    assert abs(synthetic_set.cancelled_at - timezone.now()) < timedelta(minutes=1)
    page = login(admin_user).get(set_url(synthetic_set)).content.decode()
    assert f'data-role="set-cancelled">{note}<' in page
    # The install moved: the note keeps the zone it was written in, the line says the same moment in today's.
    settings.TIME_ZONE = "America/New_York"
    page = login(admin_user).get(set_url(synthetic_set)).content.decode()
    moved = f"Cancelled by adam at {timezone.localtime(synthetic_set.cancelled_at):%Y-%m-%d %H:%M:%S %Z}."
    assert re.fullmatch(r"Cancelled by adam at \S+ \S+ E[SD]T\.", moved)
    assert f'data-role="set-cancelled">{moved}<' in page


# ----------------------------------------------------------------------------- the pages


def test_an_admin_gets_the_sets_cancel_beside_the_no_worker_notice_and_others_get_no_page(
    project: Project, outputs: Any, admin_user: Any, alice: Any, charlie: Any
) -> None:
    synthetic_set = queued_set(project, minutes_ago=5)
    admin = login(admin_user)
    for html in (admin.get(set_url(synthetic_set)).content.decode(),
                 admin.get(set_url(synthetic_set), **HTMX).content.decode(),
                 admin.get("/projects/demo/synthetic/").content.decode()):
        line = progress_line(html, synthetic_set)
        assert notice_in(line).endswith("Or cancel the job.")
        assert CANCEL_FORM in line and f'action="{set_url(synthetic_set, "cancel/")}"' in line
    auditor = member(project, "audrey", Membership.Role.AUDITOR)
    for user, refused in ((alice, 403), (auditor, 403), (charlie, 404)):
        client = login(user)
        assert client.get(set_url(synthetic_set)).status_code == refused
        assert client.post(set_url(synthetic_set, "cancel/")).status_code == refused
    assert admin.get(set_url(synthetic_set, "cancel/")).status_code == 405
    assert SyntheticSet.objects.get(pk=synthetic_set.pk).status == SyntheticSet.Status.QUEUED


def test_the_admins_cancel_reloads_the_page_which_says_who_cancelled_and_offers_resume_instead(
    project: Project, outputs: Any, admin_user: Any
) -> None:
    synthetic_set = queued_set(project, minutes_ago=5)
    admin = login(admin_user)
    answer = admin.post(set_url(synthetic_set, "cancel/"), **HTMX)
    assert answer.status_code == 200 and answer["HX-Refresh"] == "true"
    page = admin.get(set_url(synthetic_set)).content.decode()
    assert ("Set &#x27;s1&#x27; is cancelled: it asks the writer for nothing more, even if a worker picks it up; it "
            "had stored no rewrite, and Resume goes on from there.") in page
    line = progress_line(page, synthetic_set)
    assert 'data-role="set-status">0 / 20 · Cancelled<' in line
    assert re.search(r'data-role="set-cancelled">Cancelled by adam at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.<', line)
    assert CANCEL_FORM not in page and notice_in(page) is None and "hx-get" not in line  # ended: no poll
    assert 'data-role="resume"' in page
    assert '<p class="muted" data-role="set-note">Cancelled' not in page  # said once, on the progress line
    assert f'<p class="muted" data-role="set-note">{SKIPPED}</p>' in page  # the notes on skipped outputs stay
    # Again (a second tab): refused with how it ended, back to the set's page.
    again = admin.post(set_url(synthetic_set, "cancel/"))
    assert again.status_code == 302 and again["Location"] == set_url(synthetic_set)
    assert (f"Not cancelled: Set {synthetic_set.pk} was already cancelled by adam at "
            in admin.get(set_url(synthetic_set)).content.decode())
    # Resume queues it again, the cancel's line gone.
    admin.post(set_url(synthetic_set, "resume/"))
    synthetic_set.refresh_from_db()
    assert (synthetic_set.status, synthetic_set.error) == (SyntheticSet.Status.QUEUED, SKIPPED)
    assert CANCEL_FORM in admin.get(set_url(synthetic_set)).content.decode()


# ----------------------------------------------------------------------------- the API


def test_the_api_cancels_a_queued_set_200_then_409_and_refuses_other_roles(
    project: Project, outputs: Any, admin_user: Any, alice: Any, charlie: Any
) -> None:
    synthetic_set = queued_set(project)
    auditor = member(project, "audrey", Membership.Role.AUDITOR)
    for user, refused in ((alice, 403), (auditor, 403), (charlie, 404)):
        assert login(user).post(api_cancel_url(synthetic_set)).status_code == refused
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=admin_user, role=Membership.Role.ADMIN)
    admin = login(admin_user)
    assert admin.post(f"/api/projects/other/synthetic-sets/{synthetic_set.pk}/cancel/").status_code == 404
    assert admin.post("/api/projects/demo/synthetic-sets/999999/cancel/").status_code == 404
    assert admin.post(api_cancel_url(synthetic_set), {"reason": "x"}, content_type="application/json").status_code == 400
    assert SyntheticSet.objects.get(pk=synthetic_set.pk).status == SyntheticSet.Status.QUEUED
    answer = admin.post(api_cancel_url(synthetic_set))
    assert answer.status_code == 200
    body = answer.json()
    assert (body["id"], body["status"], body["status_label"], body["cancelled_by"]) == (
        synthetic_set.pk, "failed", "Cancelled", "adam")
    assert body["error"].startswith(SKIPPED + "\n") and CANCELLED.fullmatch(body["error"].splitlines()[-1])
    second = admin.post(api_cancel_url(synthetic_set))
    assert second.status_code == 409
    assert second.json()["detail"].startswith(f"Set {synthetic_set.pk} was already cancelled by adam at ")
    # The list says the same.
    (row,) = admin.get("/api/projects/demo/synthetic-sets/").json()
    assert (row["status"], row["status_label"], row["cancelled_by"]) == ("failed", "Cancelled", "adam")


def test_the_schema_documents_the_sets_cancel(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/{slug}/synthetic-sets/{id}/cancel/"]["post"]
    assert {"200", "403", "409"} <= set(operation["responses"])
    assert "already ended" in operation["responses"]["409"]["description"]
