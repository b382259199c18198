"""The audit page's POST-only addresses after the session ended: the login is checked before the method, and the
login page leads back to the audit page, never to the address posted to (after logging in the browser asks for
``next`` with a GET, which a POST-only address answers with 405)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client
from django.urls import reverse

from judging.models import Audit
from tests.conftest import PASSWORD
from tests.judging import audit_helpers
from tests.judging.audit_helpers import HTMX, AuditScene

scene = audit_helpers.scene

pytestmark = pytest.mark.django_db

POST_ONLY = ["judging-audit-submit", "judging-audit-reveal", "judging-audit-blind"]


def address(scene: AuditScene, name: str) -> str:
    args = [scene.project.slug] if name == "judging-audit-blind" else [scene.project.slug, scene.queue_order[0].pk]
    return reverse(name, args=args)


def login_next(response: object) -> str:
    location = urlsplit(response["Location"])  # type: ignore[index]
    assert location.path == reverse("login")
    return parse_qs(location.query)["next"][0]


@pytest.mark.parametrize("name", POST_ONLY)
def test_a_post_after_the_session_ended_goes_to_the_login_and_then_to_the_audit_page(
    scene: AuditScene, name: str
) -> None:
    page = reverse("judging-audit", args=[scene.project.slug])
    client = Client()
    answer = client.post(address(scene, name), {"score": "4", "blind": "on"})
    assert answer.status_code == 302
    assert login_next(answer) == page  # the old order sent next= the POST-only address: 405 after logging in

    # Logging in through that form lands on the audit page, which answers.
    logged_in = client.post(reverse("login"), {"username": scene.auditor.username, "password": PASSWORD,
                                               "next": login_next(answer)})
    assert logged_in.status_code == 302 and logged_in["Location"] == page
    assert client.get(logged_in["Location"]).status_code == 200
    assert not Audit.objects.filter(answered_at__isnull=False).exists()


@pytest.mark.parametrize("name", POST_ONLY)
def test_the_login_comes_before_the_method(scene: AuditScene, name: str) -> None:
    # A GET from a logged-out browser gets the login (it used to get 405 before its login was looked at).
    answer = Client().get(address(scene, name))
    assert answer.status_code == 302
    assert login_next(answer) == reverse("judging-audit", args=[scene.project.slug])


@pytest.mark.parametrize("name", POST_ONLY)
def test_htmx_after_the_session_ended_gets_401_and_nothing_is_saved(scene: AuditScene, name: str) -> None:
    answer = Client().post(address(scene, name), {"score": "4"}, **HTMX)
    assert answer.status_code == 401
    assert answer["X-FaithLab-Session"] == "logged_out"
    assert not Audit.objects.filter(answered_at__isnull=False).exists()
