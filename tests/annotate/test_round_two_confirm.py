"""Open round 2 asks first (hx-confirm, as removing a member does) and says what cannot be undone; a script's plain
POST still opens the round at once."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest

from annotate.models import Assignment, Batch
from tests.annotate.results_scene import HTMX, Tags
from tests.annotate.test_rounds import finish_round_one
from tests.conftest import login

pytestmark = pytest.mark.django_db


def round_two_form(html: str) -> dict[str, str]:
    found = re.search(r'<form[^>]*>(?:(?!</form>).)*data-role="open-round-two".*?</form>', html, re.S)
    assert found is not None, "no Open round 2 form"
    return Tags(found.group(0)).find("form")[-1]


def test_open_round_two_asks_first_and_names_what_cannot_be_undone(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    finish_round_one(batch, alice, bob)
    form = round_two_form(login(admin_user).get("/projects/demo/").content.decode())
    url = f"/projects/demo/batches/{batch.pk}/round-two/"
    assert form["hx-post"] == url == form["action"]
    asked = unescape(form["hx-confirm"])
    assert asked.startswith("Open round 2 of batch-1? Round 1 of this batch then freezes for everyone and can never "
                            "be re-opened, not even by an admin")
    assert "round-1 spans are copied into round 2, and every later change goes there" in asked
    assert "under the names or pseudonyms chosen here" in asked and "There is no undo." in asked
    # The members page asks the same way: the browser's own dialog through htmx's hx-confirm.
    members = login(admin_user).get("/projects/demo/members/").content.decode()
    assert "hx-confirm=" in members


def test_open_round_two_through_htmx_opens_it_and_reloads_the_page(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    finish_round_one(batch, alice, bob)
    response = login(admin_user).post(f"/projects/demo/batches/{batch.pk}/round-two/", {"reveal": "pseudonyms"},
                                      **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == "/projects/demo/"
    assert Assignment.objects.filter(batch=batch, round=2).count() == 2


def test_a_script_s_plain_post_opens_round_two_without_any_confirmation(
    batch: Batch, alice: Any, bob: Any, admin_user: Any
) -> None:
    finish_round_one(batch, alice, bob)
    response = login(admin_user).post(f"/projects/demo/batches/{batch.pk}/round-two/", {"reveal": "names"})
    assert response.status_code == 302
    assert Assignment.objects.filter(batch=batch, round=2).count() == 2
