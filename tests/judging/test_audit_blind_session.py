"""Blind mode switched with b survives a page load that was in flight at the same time (b, then a reload at once).

The session is one stored blob that a request writes back whole: a reload that read it before the switch saved
used to write its stale copy back over the switch, so the reloaded page, and every one after, had blind mode off.
These tests run the two requests interleaved by hand: the reload reads the session, the switch is posted and
saved, then the reload finishes and its session is saved as the middleware saves it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings
from django.contrib.sessions.middleware import SessionMiddleware
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import reverse
from django_htmx.middleware import HtmxDetails

from judging.services import audits
from judging.views.audit.page import audit_page
from judging.views.audit.session import AuditSession
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import HTMX, AuditScene, Element, read_html

scene = audit_helpers.scene

pytestmark = pytest.mark.django_db


def page_url(scene: AuditScene) -> str:
    return reverse("judging-audit", args=[scene.project.slug])


def blind_url(scene: AuditScene) -> str:
    return reverse("judging-audit-blind", args=[scene.project.slug])


def view_of(response: Any) -> Element:
    return read_html(response.content).one(id="audit-view")


def stored_choice(client: Client, scene: AuditScene) -> Any:
    """The blind choice as the session store holds it now (not as a request read it)."""
    entry = client.session.get(AuditSession.key(scene.project)) or {}
    return entry.get("blind")


def reload_reading_the_session(client: Client, scene: AuditScene) -> Callable[[], HttpResponse]:
    """A page load that has read the client's session and not yet answered; call the result to finish it."""
    request = RequestFactory().get(page_url(scene))
    request.COOKIES = {name: morsel.value for name, morsel in client.cookies.items()}
    middleware = SessionMiddleware(lambda _request: HttpResponse())
    middleware.process_request(request)
    assert request.session.get("_auth_user_id")  # read now, as a logged-in request does at its start
    request.user = scene.auditor
    request.htmx = HtmxDetails(request)

    def finish() -> HttpResponse:
        response = audit_page(request, slug=scene.project.slug)
        return middleware.process_response(request, response)

    return finish


def test_a_reload_that_read_the_session_before_the_switch_does_not_undo_it(scene: AuditScene) -> None:
    client = login(scene.auditor)
    assert view_of(client.get(page_url(scene))).attrs["data-blind"] == "off"  # its judges shown: kept as seen
    finish_reload = reload_reading_the_session(client, scene)

    switched = client.post(blind_url(scene), {"blind": "on"}, **HTMX)
    assert view_of(switched).attrs["data-blind"] == "on"
    finish_reload()

    assert stored_choice(client, scene) is True
    assert view_of(client.get(page_url(scene))).attrs["data-blind"] == "on"


def test_a_reload_that_has_to_write_keeps_a_switch_saved_meanwhile(scene: AuditScene) -> None:
    # No page seen yet: the reload shows the item's judges and must write that down.
    client = login(scene.auditor)
    finish_reload = reload_reading_the_session(client, scene)

    client.post(blind_url(scene), {"blind": "on"}, **HTMX)
    shown = view_of(finish_reload())
    assert shown.attrs["data-state"] == "open"  # this load read blind mode off and showed the judges

    assert stored_choice(client, scene) is True
    after = view_of(client.get(page_url(scene)))
    # Blind mode stays on; this item's judges were shown by that load, so they stay shown (the next item's will not).
    assert (after.attrs["data-blind"], after.attrs["data-state"]) == ("on", "open")
    item = int(after.attrs["data-item-id"])
    client.post(reverse("judging-audit-submit", args=[scene.project.slug, item]), {"score": "3"}, **HTMX)
    assert view_of(client.get(page_url(scene))).attrs["data-state"] == "blind"


def test_the_switch_is_stored_before_its_answer_is_prepared(
    scene: AuditScene, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reload sent while the switch's answer is being prepared (serving, rendering) reads the new choice."""
    client = login(scene.auditor)
    client.get(page_url(scene))
    seen_meanwhile: list[Any] = []
    serve = audits.serve_next_audit

    def serve_and_look(project: Any, auditor: Any, **options: Any) -> Any:  # options: the queue order
        seen_meanwhile.append(stored_choice(client, scene))
        return serve(project, auditor, **options)

    monkeypatch.setattr(audits, "serve_next_audit", serve_and_look)
    client.post(blind_url(scene), {"blind": "on"}, **HTMX)
    assert seen_meanwhile and seen_meanwhile[0] is True, f"the store held {seen_meanwhile} while the answer was made"


def test_a_page_load_that_changes_nothing_writes_no_session(scene: AuditScene) -> None:
    client = login(scene.auditor)
    client.get(page_url(scene))
    finish_reload = reload_reading_the_session(client, scene)
    response = finish_reload()
    assert response.status_code == 200
    # The middleware saved nothing (it sets the cookie whenever it saves): the session was not modified.
    assert settings.SESSION_COOKIE_NAME not in response.cookies
