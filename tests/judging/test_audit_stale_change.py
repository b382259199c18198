"""A saved verdict changed from a stale view is refused, not written over a newer change.

Two tabs of one auditor hold the same saved verdict; tab A changes it (score 1 and a note), then tab B, opened
before, changes only its note. Both used to answer 200, and tab A's note was lost without a word (on the audit
page, whose form sends the whole verdict, tab A's score too). ``changed_at`` is now the verdict's version: the API's
PUT and PATCH take it back as ``base_changed_at`` (null: never changed) and answer 409 ``changed_since`` with the
saved verdict as ``current`` when it changed since, nothing saved; the page's change form always carries it, and
answers a stale change with the verdict saved meanwhile shown above the change, which the form keeps, ready to be
applied over it. A change sent without the field is written unchecked, as before.

The last test races two tabs on PostgreSQL (skipped on SQLite): the check is made under the row's lock. Run with

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \\
        .venv/bin/python -m pytest tests/judging/test_audit_stale_change.py -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.db import connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.fields import DateTimeField

from annotate.models import Batch, Project
from judging.models import Audit
from judging.services import audits
from tests.conftest import login, needs_postgres
from tests.judging import audit_helpers
from tests.judging.audit_helpers import HTMX, AuditScene, Clock, build_scene, read_html

scene = audit_helpers.scene
clock = audit_helpers.clock

SAVED = ("score", "agreed", "reasoning_wrong", "note", "blind", "answered_at", "seconds", "changed_at")


def send(client: Client, method: str, audit_id: int, body: Any = None) -> Any:
    address = f"/api/audits/{audit_id}/"
    if method == "get":
        return client.get(address)
    return getattr(client, method)(address, json.dumps(body), content_type="application/json")


def saved(audit_id: int) -> tuple[Any, ...]:
    audit = Audit.objects.get(pk=audit_id)
    return tuple(getattr(audit, name) for name in SAVED)


def answered(scene: AuditScene, clock: Clock | None = None) -> Audit:
    """The auditor's first item (output 1: the explainer said 3, with reasoning) answered: score 2, a note."""
    served = audits.serve_next_audit(scene.project, scene.auditor)
    assert served is not None
    if clock is not None:
        clock.advance(7.5)
    audit, _ = audits.submit_audit(scene.project, scene.auditor, served.item_id, score=2, agreed=False,
                                   reasoning_wrong=False, note="first look")
    return audit


def parse_time(stamp: str) -> Any:
    return DateTimeField().to_internal_value(stamp)


def local(moment: Any) -> str:
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M:%S}"


# --------------------------------------------------------------------------- the API


@pytest.mark.django_db
def test_a_stale_tabs_patch_is_409_with_the_saved_verdict_and_changes_nothing(scene: AuditScene, clock: Clock) -> None:
    audit = answered(scene, clock)
    client = login(scene.auditor)
    tab_b_seen = send(client, "get", audit.pk).json()
    assert tab_b_seen["changed_at"] is None
    clock.advance(60)
    tab_a = send(client, "patch", audit.pk, {"score": 1, "note": "tab A: the date is wrong, score 1",
                                             "base_changed_at": None})
    assert tab_a.status_code == 200, tab_a.content
    assert tab_a.json()["changed_at"] == "2026-03-02T09:01:07.500000Z"
    before = saved(audit.pk)

    clock.advance(30)
    tab_b = send(client, "patch", audit.pk, {"note": "tab B: typo in my note",
                                             "base_changed_at": tab_b_seen["changed_at"]})
    assert tab_b.status_code == 409, tab_b.content
    body = tab_b.json()
    assert body["code"] == "changed_since"
    assert body["current"] == tab_a.json()  # the saved verdict, as GET gives it
    assert (body["current"]["score"], body["current"]["note"]) == (1, "tab A: the date is wrong, score 1")
    stored = Audit.objects.get(pk=audit.pk)
    assert body["detail"] == (
        f"Audit {audit.pk} was changed at {local(stored.changed_at)} by grace (another tab, browser or API client), "
        "after the verdict base_changed_at names (you saw it as first answered); nothing was changed. 'current' "
        "holds the saved verdict (score 1): to apply your change over it, send it again with current's changed_at "
        "as base_changed_at."
    )
    assert saved(audit.pk) == before

    # Sent again from the verdict saved now, the note goes over it and tab A's score stays.
    again = send(client, "patch", audit.pk, {"note": "tab B: typo in my note",
                                             "base_changed_at": body["current"]["changed_at"]})
    assert again.status_code == 200, again.content
    assert (again.json()["score"], again.json()["note"]) == (1, "tab B: typo in my note")
    assert again.json()["changed_at"] == "2026-03-02T09:01:37.500000Z"


@pytest.mark.django_db
def test_a_stale_put_is_409_too_and_names_the_change_it_missed(scene: AuditScene, clock: Clock) -> None:
    audit = answered(scene, clock)
    client = login(scene.auditor)
    clock.advance(10)
    first = send(client, "put", audit.pk, {"score": 4, "agreed": False, "reasoning_wrong": False, "note": "",
                                           "base_changed_at": None}).json()
    clock.advance(10)
    second = send(client, "put", audit.pk, {"score": 5, "agreed": False, "reasoning_wrong": False, "note": "",
                                            "base_changed_at": first["changed_at"]})
    assert second.status_code == 200, second.content
    before = saved(audit.pk)
    stale = send(client, "put", audit.pk, {"score": 1, "agreed": False, "reasoning_wrong": True, "note": "old tab",
                                           "base_changed_at": first["changed_at"]})
    assert stale.status_code == 409, stale.content
    assert stale.json()["current"]["score"] == 5 and stale.json()["code"] == "changed_since"
    stored = Audit.objects.get(pk=audit.pk)
    assert f"you saw it as changed at {local(parse_time(first['changed_at']))}" in stale.json()["detail"]
    assert f"was changed at {local(stored.changed_at)} by grace" in stale.json()["detail"]
    assert saved(audit.pk) == before


@pytest.mark.django_db
def test_without_base_changed_at_a_change_is_written_unchecked(scene: AuditScene, clock: Clock) -> None:
    audit = answered(scene, clock)
    client = login(scene.auditor)
    assert send(client, "patch", audit.pk, {"score": 1, "note": "tab A"}).status_code == 200
    clock.advance(5)
    response = send(client, "patch", audit.pk, {"note": "tab B"})
    assert response.status_code == 200, response.content
    assert (response.json()["score"], response.json()["note"]) == (1, "tab B")


@pytest.mark.django_db
def test_a_stale_change_that_leaves_the_verdict_as_saved_is_a_retry_answered_200(scene: AuditScene,
                                                                                  clock: Clock) -> None:
    """A client whose answer was lost sends its change again with the version it started from: nothing to undo."""
    audit = answered(scene, clock)
    client = login(scene.auditor)
    clock.advance(5)
    done = send(client, "patch", audit.pk, {"score": 1, "note": "tab A", "base_changed_at": None}).json()
    before = saved(audit.pk)
    clock.advance(5)
    retry = send(client, "patch", audit.pk, {"score": 1, "note": "tab A", "base_changed_at": None})
    assert retry.status_code == 200 and retry.json() == done
    whole = send(client, "put", audit.pk, {"score": 1, "agreed": False, "reasoning_wrong": False, "note": "tab A ",
                                           "base_changed_at": None})
    assert whole.status_code == 200 and whole.json() == done
    assert saved(audit.pk) == before


@pytest.mark.django_db
def test_the_stale_view_is_named_before_a_refusal_that_depends_on_what_changed(scene: AuditScene,
                                                                               clock: Clock) -> None:
    """Tab A agreed with the judge; stale tab B sends a score alone: 409 saying the verdict changed, not the 400
    about a score beside a saved agreement that tab B never saw."""
    audit = answered(scene, clock)
    client = login(scene.auditor)
    clock.advance(5)
    assert send(client, "patch", audit.pk, {"agreed": True, "base_changed_at": None}).json()["agreed"] is True
    stale = send(client, "patch", audit.pk, {"score": 4, "base_changed_at": None})
    assert stale.status_code == 409 and stale.json()["code"] == "changed_since", stale.content
    assert stale.json()["current"]["agreed"] is True


@pytest.mark.django_db
def test_a_bad_base_changed_at_is_400_naming_it(scene: AuditScene) -> None:
    audit = answered(scene)
    before = saved(audit.pk)
    response = send(login(scene.auditor), "patch", audit.pk, {"note": "x", "base_changed_at": "yesterday"})
    assert response.status_code == 400 and set(response.json()) == {"base_changed_at"}
    assert saved(audit.pk) == before


@pytest.mark.django_db
def test_changed_at_as_a_field_is_refused_pointing_at_base_changed_at(scene: AuditScene) -> None:
    audit = answered(scene)
    response = send(login(scene.auditor), "patch", audit.pk, {"note": "x", "changed_at": None})
    assert response.status_code == 400
    (message,) = response.json()["changed_at"]
    assert message.startswith("changed_at is read-only") and "base_changed_at" in message


@pytest.mark.django_db
def test_changed_at_moves_forward_even_when_the_clock_stands(scene: AuditScene, clock: Clock) -> None:
    """The version must differ after every change: two changes at one moment (a clock that stood, or went back)
    still give the second its own changed_at, so a view of the first is stale after the second."""
    audit = answered(scene, clock)
    client = login(scene.auditor)
    first = send(client, "patch", audit.pk, {"score": 4, "base_changed_at": None}).json()
    second = send(client, "patch", audit.pk, {"score": 5, "base_changed_at": first["changed_at"]}).json()
    assert first["changed_at"] == "2026-03-02T09:00:07.500000Z"
    assert second["changed_at"] == "2026-03-02T09:00:07.500001Z"
    clock.moment -= timedelta(hours=1)
    third = send(client, "patch", audit.pk, {"score": 3, "base_changed_at": second["changed_at"]}).json()
    assert third["changed_at"] == "2026-03-02T09:00:07.500002Z"
    stale = send(client, "patch", audit.pk, {"score": 1, "base_changed_at": first["changed_at"]})
    assert stale.status_code == 409 and stale.json()["current"]["score"] == 3


@pytest.mark.django_db
def test_the_schema_describes_base_changed_at_and_the_409(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    components = schema["components"]["schemas"]
    for name in ("AuditChange", "PatchedAuditChange"):
        field = components[name]["properties"]["base_changed_at"]
        assert field["format"] == "date-time" and field.get("nullable") is True
        assert "409" in field["description"] and "Leave it out" in field["description"]
        assert "base_changed_at" not in components[name].get("required", [])
    operations = schema["paths"]["/api/audits/{id}/"]
    for method in ("put", "patch"):
        conflict = operations[method]["responses"]["409"]
        assert conflict["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/AuditConflict"}
        assert "changed_since" in conflict["description"]
    properties = components["AuditConflict"]["properties"]
    assert {"$ref": "#/components/schemas/AuditResult"} in properties["current"]["allOf"]
    assert "changed_since" in properties["current"]["description"]
    assert "current" not in components["AuditConflict"]["required"]
    code = properties["code"]["allOf"][0]["$ref"].rsplit("/", 1)[1]
    assert "changed_since" in components[code]["enum"]


# --------------------------------------------------------------------------- the audit page's change form


def change_form(html: bytes) -> Any:
    return read_html(html).one("form", data_role="audit-form")


def posted(form: Any, **changes: str) -> dict[str, str]:
    """What the form sends as drawn (its named inputs), with the auditor's ``changes``."""
    fields = {element.attrs["name"]: element.attrs.get("value", "") for element in form.find("input")
              if element.attrs.get("name") and element.attrs.get("type") != "checkbox"}
    fields["note"] = form.one("textarea").text
    fields.update(changes)
    return fields


@pytest.mark.django_db
def test_the_pages_change_form_from_a_stale_tab_is_409_showing_the_verdict_saved_meanwhile(
    project: Project, batch: Batch, clock: Clock
) -> None:
    scene = build_scene(project, batch)
    audit = answered(scene, clock)
    url = reverse("judging-audit-answered", args=[project.slug, audit.pk])
    tab_a, tab_b = login(scene.auditor), login(scene.auditor)
    form_a = change_form(tab_a.get(url, **HTMX).content)
    form_b = change_form(tab_b.get(url, **HTMX).content)
    assert form_b.one("input", data_role="base-changed-at").attrs["value"] == "none"

    clock.advance(60)
    saved_a = tab_a.post(url, posted(form_a, score="1", note="tab A: the date is wrong"), **HTMX)
    assert saved_a.status_code == 200, saved_a.content
    before = saved(audit.pk)

    # Tab B, drawn before, sends the whole verdict with only its note changed.
    refused = tab_b.post(url, posted(form_b, note="tab B: typo in my note"), **HTMX)
    assert refused.status_code == 409, refused.content
    assert saved(audit.pk) == before  # tab A's score and note stand
    page = read_html(refused.content)
    stored = Audit.objects.get(pk=audit.pk)
    (error,) = page.find(data_role="error")
    assert error.text.startswith(f"Not saved: this verdict was changed at {local(stored.changed_at)} in another tab")
    conflict = page.one(data_role="verdict-conflict")
    assert conflict.one(data_role="current-score").text == "1"
    assert conflict.one(data_role="current-note").text == "tab A: the date is wrong"
    assert conflict.one(data_role="take-current").attrs["href"] == url
    # The form keeps tab B's change, now made from the verdict saved meanwhile: Enter applies it over that one.
    form = page.one("form", data_role="audit-form")
    assert form.one("textarea").text == "tab B: typo in my note"
    assert form.one("input", data_role="score-input").attrs["value"] == "2"
    assert form.one("input", data_role="base-changed-at").attrs["value"] == stored.changed_at.isoformat()

    clock.advance(5)
    applied = tab_b.post(url, posted(form), **HTMX)
    assert applied.status_code == 200, applied.content
    stored.refresh_from_db()
    assert (stored.score, stored.note) == (2, "tab B: typo in my note")


@pytest.mark.django_db
def test_a_change_form_without_the_version_is_saved_unchecked(project: Project, batch: Batch, clock: Clock) -> None:
    """A tab drawn before the form carried base_changed_at is not refused for lacking it."""
    scene = build_scene(project, batch)
    audit = answered(scene, clock)
    url = reverse("judging-audit-answered", args=[project.slug, audit.pk])
    client = login(scene.auditor)
    audits.change_audit(project, scene.auditor, audit.pk, score=4, agreed=False, reasoning_wrong=False, note="")
    response = client.post(url, {"score": "1", "note": "from an old page"}, **HTMX)
    assert response.status_code == 200, response.content
    assert Audit.objects.get(pk=audit.pk).note == "from an old page"


@pytest.mark.django_db
def test_a_garbled_version_on_the_change_form_is_refused_and_drawn_again(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    audit = answered(scene)
    before = saved(audit.pk)
    url = reverse("judging-audit-answered", args=[project.slug, audit.pk])
    response = login(scene.auditor).post(url, {"score": "1", "note": "", "base_changed_at": "soon"}, **HTMX)
    assert response.status_code == 400
    assert "base_changed_at: &#x27;soon&#x27; is neither &#x27;none&#x27; nor a time" in response.content.decode()
    assert saved(audit.pk) == before


# --------------------------------------------------------------------------- two tabs at once (PostgreSQL)


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_tabs_changing_from_one_view_at_once_save_one_change(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    audit = answered(scene)
    start = threading.Barrier(2)
    answers: dict[str, int] = {}

    def change(note: str) -> None:
        try:
            start.wait(timeout=30)
            answers[note] = send(login(scene.auditor), "patch", audit.pk,
                                 {"note": note, "base_changed_at": None}).status_code
        finally:
            connections.close_all()

    threads = [threading.Thread(target=change, args=(note,)) for note in ("tab A", "tab B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(answers.values()) == [200, 409], answers
    (winner,) = [note for note, code in answers.items() if code == 200]
    assert Audit.objects.get(pk=audit.pk).note == winner
