"""The item clock while an auditor changes a saved verdict: the time spent on the change page counts for no item.

Opening a saved verdict stops the clock of the item the auditor holds (pause_item_clock); coming back to it starts
it again with served_at moved forward by the time it stood (resume_item_clock). The changed verdict keeps its first
answer's seconds. A pause kept across a reload or a second tab is the first one; a pause resumes once; no time is
ever negative; an item answered from a tab that kept showing it keeps its whole time. The clock is moved by hand
(tests/judging/audit_helpers.py), never slept on."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from judging.models import Audit
from judging.services import audits
from judging.services.audits import ClockPause
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import HTMX, AuditScene, Clock, make_auditor, read_html

scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db


def answer(scene: AuditScene, auditor: Any, score: int = 3) -> Audit:
    """The auditor's held (or next) item answered with ``score``, and the next one served, as the page does."""
    held = audits.serve_next_audit(scene.project, auditor)
    assert held is not None
    saved, _ = audits.submit_audit(
        scene.project, auditor, held.item_id, score=score, agreed=False, reasoning_wrong=False, note=""
    )
    audits.serve_next_audit(scene.project, auditor)
    return saved


def held_audit(scene: AuditScene) -> Audit:
    held = audits.serve_next_audit(scene.project, scene.auditor)
    assert held is not None
    return held


def elapsed(scene: AuditScene, clock: Clock) -> float:
    """The held item's time so far, as the page shows it (now - served_at)."""
    return (clock.moment - held_audit(scene).served_at).total_seconds()


# --------------------------------------------------------------------------- services


def test_the_time_spent_changing_a_verdict_is_left_out_of_the_held_items_time(scene: AuditScene, clock: Clock) -> None:
    held_audit(scene)
    clock.advance(8)
    first = answer(scene, scene.auditor, score=2)  # the next item is served now
    assert first.seconds == 8.0
    clock.advance(5)  # five seconds on the second item, then u
    pause = audits.pause_item_clock(scene.project, scene.auditor, None)
    assert pause is not None and pause.since == clock.moment
    clock.advance(300)  # five minutes changing the first verdict
    audits.change_audit(scene.project, scene.auditor, first.pk, score=4, agreed=False, reasoning_wrong=False, note="")
    assert audits.resume_item_clock(scene.project, scene.auditor, pause) == 300.0
    assert elapsed(scene, clock) == 5.0
    clock.advance(4)
    second = answer(scene, scene.auditor)
    assert second.seconds == 9.0  # 5 + 4: the five minutes are in neither item
    first.refresh_from_db()
    assert (first.score, first.seconds) == (4, 8.0)  # the changed verdict keeps its first answer's time


def test_opening_another_saved_verdict_or_the_same_again_keeps_the_first_pause(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor)
    clock.advance(2)
    pause = audits.pause_item_clock(scene.project, scene.auditor, None)
    clock.advance(50)
    again = audits.pause_item_clock(scene.project, scene.auditor, pause)  # a reload of the change page, or u again
    assert again == pause
    clock.advance(100)
    assert audits.resume_item_clock(scene.project, scene.auditor, again) == 150.0
    assert elapsed(scene, clock) == 2.0


def test_a_pause_resumes_once_even_when_sent_back_again(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor)
    clock.advance(3)
    pause = audits.pause_item_clock(scene.project, scene.auditor, None)
    clock.advance(60)
    assert audits.resume_item_clock(scene.project, scene.auditor, pause) == 60.0
    start = held_audit(scene).served_at
    clock.advance(10)
    # A stale copy of the session (a request that read it before the resume), or a second tab coming back.
    assert audits.resume_item_clock(scene.project, scene.auditor, pause) == 0.0
    assert held_audit(scene).served_at == start
    assert elapsed(scene, clock) == 13.0
    # Once resumed, opening a saved verdict again stops the clock anew, from now.
    fresh = audits.pause_item_clock(scene.project, scene.auditor, pause)
    assert fresh is not None and fresh != pause and fresh.since == clock.moment


def test_two_tabs_changing_at_once_leave_the_time_out_once(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor)
    answer(scene, scene.auditor)
    clock.advance(7)
    tab_a = audits.pause_item_clock(scene.project, scene.auditor, None)
    clock.advance(20)
    tab_b = audits.pause_item_clock(scene.project, scene.auditor, tab_a)  # the same session: the first pause
    clock.advance(30)
    left_out = audits.resume_item_clock(scene.project, scene.auditor, tab_a)
    clock.advance(40)  # tab b is still on its change page; tab a shows the item, whose clock runs
    left_out += audits.resume_item_clock(scene.project, scene.auditor, tab_b)
    assert left_out == 50.0
    assert elapsed(scene, clock) == 7.0 + 40.0


def test_an_abandoned_change_is_resumed_when_the_auditor_comes_back(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor)
    clock.advance(6)
    pause = audits.pause_item_clock(scene.project, scene.auditor, None)
    clock.advance(20 * 60)  # the tab was closed on the change page; back twenty minutes later
    assert audits.resume_item_clock(scene.project, scene.auditor, pause) == 20 * 60.0
    assert elapsed(scene, clock) == 6.0


def test_a_pause_on_a_serve_released_meanwhile_does_nothing(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor)
    stopped = held_audit(scene)
    pause = audits.pause_item_clock(scene.project, scene.auditor, None)
    clock.advance(audits.SERVE_MINUTES * 60 + 1)
    hedy = make_auditor(scene.project, "hedy")
    taken = audits.serve_next_audit(scene.project, hedy)  # grace's serve is stale: hedy takes its slot
    assert taken is not None and taken.item_id == stopped.item_id
    assert not Audit.objects.filter(pk=stopped.pk).exists()
    assert audits.resume_item_clock(scene.project, scene.auditor, pause) == 0.0
    assert elapsed(scene, clock) == 0.0  # grace's next item, served now


def test_an_item_answered_from_a_tab_that_kept_showing_it_keeps_its_whole_time(
    scene: AuditScene, clock: Clock
) -> None:
    answer(scene, scene.auditor)
    clock.advance(5)
    pause = audits.pause_item_clock(scene.project, scene.auditor, None)  # tab a: u
    clock.advance(60)
    second = answer(scene, scene.auditor)  # tab b: the item was on screen all along, its clock running
    assert second.seconds == 65.0
    assert audits.resume_item_clock(scene.project, scene.auditor, pause) == 0.0
    second.refresh_from_db()
    assert second.seconds == 65.0


def test_a_damaged_pause_never_makes_the_time_negative(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor)
    clock.advance(10)
    held = held_audit(scene)
    future = ClockPause(audit=held.pk, since=clock.moment + timedelta(hours=1), start=held.served_at)
    assert audits.resume_item_clock(scene.project, scene.auditor, future) == 0.0
    before = ClockPause(audit=held.pk, since=held.served_at - timedelta(hours=1), start=held.served_at)
    assert audits.resume_item_clock(scene.project, scene.auditor, before) == 10.0
    assert held_audit(scene).served_at == clock.moment
    assert elapsed(scene, clock) == 0.0


def test_nothing_held_nothing_paused_and_another_auditors_pause_does_nothing(scene: AuditScene, clock: Clock) -> None:
    assert audits.pause_item_clock(scene.project, scene.auditor, None) is None  # nothing served yet
    hedy = make_auditor(scene.project, "hedy")
    audits.serve_next_audit(scene.project, hedy)
    held = held_audit(scene)
    clock.advance(30)
    hers = ClockPause(audit=held.pk, since=held.served_at, start=held.served_at)
    assert audits.resume_item_clock(scene.project, hedy, hers) == 0.0
    assert held_audit(scene).served_at == held.served_at


def test_a_pause_goes_through_the_session_as_json_and_junk_reads_as_none(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor)
    pause = audits.pause_item_clock(scene.project, scene.auditor, None)
    assert pause is not None
    assert ClockPause.from_json(pause.as_json()) == pause
    for junk in (None, "x", {}, {"audit": True, "since": "2026-03-02T09:00:00+00:00", "start": "2026-03-02T09:00:00+00:00"},
                 {"audit": 1, "since": "yesterday", "start": "2026-03-02T09:00:00+00:00"},
                 {"audit": 1, "since": "2026-03-02T09:00:00", "start": "2026-03-02T09:00:00"}):
        assert ClockPause.from_json(junk) is None


# --------------------------------------------------------------------------- the page


def page(client: Client, scene: AuditScene) -> Any:
    return client.get(reverse("judging-audit", args=[scene.project.slug]), **HTMX)


def shown_elapsed(response: Any) -> float:
    view = read_html(response.content).one(id="audit-view")
    return float(view.one(data_role="item-time").attrs["data-elapsed"])


def change_url(scene: AuditScene, audit: Audit) -> str:
    return reverse("judging-audit-answered", args=[scene.project.slug, audit.pk])


def test_the_page_shows_the_held_items_time_without_the_change_and_records_the_same(
    scene: AuditScene, clock: Clock
) -> None:
    client = login(scene.auditor)
    first, second, _ = scene.queue_order
    page(client, scene)
    clock.advance(8)
    client.post(reverse("judging-audit-submit", args=[scene.project.slug, first.pk]), {"score": "2"}, **HTMX)
    saved = Audit.objects.get(item=first, auditor=scene.auditor)
    clock.advance(5)
    assert client.get(change_url(scene, saved), **HTMX).status_code == 200  # u
    clock.advance(600)
    back = client.post(change_url(scene, saved), {"score": "5"}, **HTMX)  # the change saved: the current item again
    assert read_html(back.content).one(id="audit-view").attrs["data-item-id"] == str(second.pk)
    assert shown_elapsed(back) == 5.0
    clock.advance(3)
    client.post(reverse("judging-audit-submit", args=[scene.project.slug, second.pk]), {"score": "4"}, **HTMX)
    assert Audit.objects.get(item=second, auditor=scene.auditor).seconds == 8.0  # 5 + 3, as the page counted
    assert Audit.objects.get(pk=saved.pk).seconds == 8.0  # the changed verdict keeps its first answer's time


def test_reloading_the_change_page_and_coming_back_twice_leave_the_change_out_once(
    scene: AuditScene, clock: Clock
) -> None:
    client = login(scene.auditor)
    page(client, scene)
    saved = answer(scene, scene.auditor)
    clock.advance(4)
    client.get(change_url(scene, saved), **HTMX)
    clock.advance(100)
    client.get(change_url(scene, saved))  # a reload of the change page (the whole page)
    clock.advance(100)
    assert shown_elapsed(page(client, scene)) == 4.0  # Esc: 200 s changing, left out
    clock.advance(10)
    assert shown_elapsed(page(client, scene)) == 14.0  # a reload: nothing left out again


def test_a_clock_that_went_back_records_no_time_rather_than_zero(scene: AuditScene, clock: Clock) -> None:
    """The server clock set back between serve and verdict: the time is not known (None), not 0 s, which would pass
    for the fastest audit there is in the per-auditor times."""
    held_audit(scene)
    clock.advance(-60)
    saved = answer(scene, scene.auditor)
    assert saved.answered_at == clock.moment and saved.seconds is None
    assert Audit.objects.get(pk=saved.pk).seconds is None
