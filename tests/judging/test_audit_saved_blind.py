"""The line that confirms a saved verdict says "given blind" exactly when the stored audit is blind (its score is
the one given before the judges were shown): in the htmx answer's Saved line, and in the message a plain form
post is redirected to."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Audit
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import HTMX, Clock, build_scene, read_html

clock = audit_helpers.clock

pytestmark = pytest.mark.django_db


def urls(project: Project, item_id: int) -> tuple[str, str, str]:
    return (
        reverse("judging-audit", args=[project.slug]),
        reverse("judging-audit-reveal", args=[project.slug, item_id]),
        reverse("judging-audit-submit", args=[project.slug, item_id]),
    )


def saved_line(response: object) -> str:
    last = read_html(response.content).one(id="audit-view").one(data_role="last-saved")  # type: ignore[attr-defined]
    return " ".join(last.text.split())


def test_the_htmx_saved_line_says_given_blind_for_a_blind_score_and_not_otherwise(
    project: Project, batch: Batch, clock: Clock
) -> None:
    scene = build_scene(project, batch, blind=True)
    first, second, _ = scene.queue_order
    client = login(scene.auditor)
    page, reveal, submit = urls(project, first.pk)
    client.get(page)
    client.post(reveal, {"score": "4"}, **HTMX)
    clock.advance(7.5)
    response = client.post(submit, {"score": "4"}, **HTMX)
    assert Audit.objects.get(item=first, auditor=scene.auditor).blind is True
    assert saved_line(response) == "Saved: score 4, given blind, 7.5 s · u to change it"

    _, reveal, submit = urls(project, second.pk)
    client.post(reveal, {"score": "5"}, **HTMX)
    response = client.post(submit, {"agreed": "1"}, **HTMX)  # the judge's score, which is not 5
    agreed = Audit.objects.get(item=second, auditor=scene.auditor)
    assert (agreed.agreed, agreed.blind, agreed.blind_score) == (True, False, 5) and agreed.score != 5
    # The score given blind is kept, and said: not "given blind", which means the final score is that one.
    assert saved_line(response) == f"Saved: score {agreed.score} (agreed), 5 given blind, 0.0 s · u to change it"


def test_the_message_after_a_plain_post_says_given_blind(project: Project, batch: Batch, clock: Clock) -> None:
    scene = build_scene(project, batch, blind=True)
    first = scene.queue_order[0]
    client = login(scene.auditor)
    page, reveal, submit = urls(project, first.pk)
    client.get(page)
    client.post(reveal, {"score": "5"}, **HTMX)
    clock.advance(3)
    response = client.post(submit, {"score": "5"})
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Saved: score 5, given blind, 3.0 s on the item (server time)."
    ]


def test_a_verdict_whose_time_is_not_known_says_so_on_the_page_and_in_the_message(
    project: Project, batch: Batch, clock: Clock
) -> None:
    """The server clock went back between serve and answer: seconds is None, and the page and the message say the
    time is not known instead of failing or showing " s"."""
    scene = build_scene(project, batch, blind=True)
    first, second, _ = scene.queue_order
    client = login(scene.auditor)
    page, reveal, submit = urls(project, first.pk)
    client.get(page)
    client.post(reveal, {"score": "4"}, **HTMX)
    clock.advance(-30)
    response = client.post(submit, {"score": "4"}, **HTMX)
    assert response.status_code == 200
    assert Audit.objects.get(item=first, auditor=scene.auditor).seconds is None
    assert saved_line(response) == "Saved: score 4, given blind, time not known · u to change it"

    _, reveal, submit = urls(project, second.pk)
    client.post(reveal, {"score": "5"}, **HTMX)
    clock.advance(-30)
    response = client.post(submit, {"score": "5"})
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request)] == [
        "Saved: score 5, given blind, time on the item not known."
    ]
