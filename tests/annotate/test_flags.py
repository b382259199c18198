"""Sample flags: the service, the API action (POST/DELETE /api/samples/<id>/flag/), the admins' flags page."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotate.models import Assignment, Batch, Membership, Passage, Project, Sample, SampleFlag
from annotate.services import flags
from tests.conftest import login

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
FLAGS_URL = "/projects/demo/flags/"


def api(sample: Sample) -> str:
    return f"/api/samples/{sample.pk}/flag/"


def post_flag(user: Any, sample: Sample, **body: Any) -> Any:
    return login(user).post(api(sample), {"kind": "broken", "comment": "", **body}, content_type="application/json")


# --------------------------------------------------------------------------- service


def test_flag_is_raised_then_changed_and_reopened(sample: Sample, alice: Any, admin_user: Any) -> None:
    flag, created = flags.flag_sample(sample, alice, round=1, kind="broken", comment="  source is empty ")
    assert created and (flag.kind, flag.comment, flag.resolved_at) == ("broken", "source is empty", None)
    flags.resolve_flag(flag, admin_user)
    again, created = flags.flag_sample(sample, alice, round=1, kind="skip", comment="duplicate")
    assert not created and again.pk == flag.pk
    stored = SampleFlag.objects.get()
    assert (stored.kind, stored.comment, stored.resolved_at, stored.resolved_by) == ("skip", "duplicate", None, None)


@pytest.mark.parametrize(
    ("arguments", "field", "message"),
    [
        ({"kind": "odd"}, "kind", "'odd' is not one of broken, skip"),
        ({"comment": "x" * 2001}, "comment", "is 2001 characters long; at most 2000"),
        ({"comment": 5}, "comment", "must be text"),
        ({"round": 0}, "round", "0 is not a round number (1, 2, ...)"),
        ({"round": 2}, "round", "only the annotators of round 2 of batch 'batch-1' flag its samples"),
    ],
)
def test_bad_flags_are_refused(sample: Sample, alice: Any, arguments: dict[str, Any], field: str,
                               message: str) -> None:
    with pytest.raises(flags.FlagError) as caught:
        flags.flag_sample(sample, alice, **({"round": 1, "kind": "broken", "comment": ""} | arguments))
    assert (caught.value.field, caught.value.message) == (field, message)
    assert not SampleFlag.objects.exists()


def test_withdraw_and_resolve(sample: Sample, alice: Any, admin_user: Any) -> None:
    flag, _ = flags.flag_sample(sample, alice, round=1, kind="skip")
    first = flags.resolve_flag(flag, admin_user).resolved_at
    assert flags.resolve_flag(flag, admin_user).resolved_at == first  # resolving twice keeps the first resolution
    flags.withdraw_flag(sample, alice, round=1)
    assert not SampleFlag.objects.exists()
    with pytest.raises(flags.NoFlag, match="you have not flagged this sample in round 1"):
        flags.withdraw_flag(sample, alice, round=1)


# --------------------------------------------------------------------------- API


def test_api_url_name_is_sample_flag(sample: Sample) -> None:
    assert reverse("sample-flag", args=[sample.pk]) == api(sample)


def test_api_creates_updates_and_withdraws(sample: Sample, alice: Any) -> None:
    response = post_flag(alice, sample, kind="broken", comment="summary cut off", round=1)
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"kind", "comment", "created_at"}
    assert (body["kind"], body["comment"]) == ("broken", "summary cut off")
    response = post_flag(alice, sample, kind="skip", comment="never mind, skip it")
    assert response.status_code == 200 and response.json()["kind"] == "skip"
    assert response.json()["created_at"] == body["created_at"]
    assert SampleFlag.objects.get().comment == "never mind, skip it"
    assert login(alice).get(api(sample)).json()["kind"] == "skip"
    assert login(alice).delete(api(sample) + "?round=1").status_code == 204
    assert not SampleFlag.objects.exists()
    gone = login(alice).delete(api(sample))
    assert gone.status_code == 404 and "you have not flagged this sample in round 1" in gone.json()["detail"]
    assert login(alice).get(api(sample)).status_code == 404


def test_api_delete_takes_the_round_from_the_body(sample: Sample, alice: Any) -> None:
    Assignment.objects.create(batch=sample.batch, annotator=alice, round=2)
    flags.flag_sample(sample, alice, round=2, kind="skip")
    response = login(alice).delete(api(sample), {"round": 2}, content_type="application/json")
    assert response.status_code == 204 and not SampleFlag.objects.exists()


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"kind": "weird"}, "kind", "is not a valid choice"),
        ({"kind": None}, "kind", "may not be null"),
        ({"round": 0}, "round", "greater than or equal to 1"),
        ({"comment": "x" * 2001}, "comment", "at most 2000"),
    ],
)
def test_api_bad_input_is_400_and_stores_nothing(sample: Sample, alice: Any, body: dict[str, Any], field: str,
                                                 text: str) -> None:
    response = post_flag(alice, sample, **body)
    assert response.status_code == 400
    assert text in str(response.json()[field])
    assert not SampleFlag.objects.exists()


def test_api_only_the_rounds_annotators_flag(sample: Sample, alice: Any, admin_user: Any, charlie: Any) -> None:
    assert post_flag(admin_user, sample).status_code == 403
    denied = post_flag(alice, sample, round=2)
    assert denied.status_code == 403 and "only the annotators of round 2" in denied.json()["detail"]
    assert post_flag(charlie, sample).status_code == 404
    other = Batch.objects.create(project=sample.project, name="b2")
    passage = Passage.objects.create(project=sample.project, external_id="x", text="Text.")
    elsewhere = Sample.objects.create(project=sample.project, passage=passage, batch=other, summary="Text.")
    assert post_flag(alice, elsewhere).status_code == 404  # not assigned to that batch: not visible at all
    assert login(alice).put(api(sample), {"kind": "skip"}, content_type="application/json").status_code == 405
    assert login(admin_user).delete(api(sample)).status_code == 403
    assert not SampleFlag.objects.exists()


# --------------------------------------------------------------------------- flags page


@pytest.fixture
def raised(sample: Sample, alice: Any, bob: Any, admin_user: Any) -> dict[str, SampleFlag]:
    open_flag, _ = flags.flag_sample(sample, alice, round=1, kind="broken", comment="<b>source</b> missing")
    done, _ = flags.flag_sample(sample, bob, round=1, kind="skip", comment="dup")
    flags.resolve_flag(done, admin_user)
    return {"open": open_flag, "resolved": done}


def test_flags_page_lists_open_and_resolved(raised: dict[str, SampleFlag], sample: Sample, admin_user: Any) -> None:
    response = login(admin_user).get(FLAGS_URL)
    assert response.status_code == 200
    html = response.content.decode()
    open_part, resolved_part = html.split('data-role="resolved-flags"')
    assert f'data-flag="{raised["open"].pk}"' in open_part and "&lt;b&gt;source&lt;/b&gt; missing" in open_part
    assert f'href="/projects/demo/samples/{sample.pk}/?round=1"' in open_part
    assert f'data-flag="{raised["resolved"].pk}"' in resolved_part and "by adam" in resolved_part
    assert 'data-role="resolve"' not in resolved_part


def test_resolve_button(raised: dict[str, SampleFlag], admin_user: Any) -> None:
    flag = raised["open"]
    client = login(admin_user)
    response = client.post(f"{FLAGS_URL}{flag.pk}/resolve/")
    assert response.status_code == 302 and response["Location"] == FLAGS_URL
    flag.refresh_from_db()
    assert flag.resolved_by == admin_user and flag.resolved_at is not None
    assert "Flag on sample 0 resolved." in client.get(FLAGS_URL).content.decode()


def test_resolve_htmx_variant_returns_the_lists(raised: dict[str, SampleFlag], admin_user: Any) -> None:
    response = login(admin_user).post(f"{FLAGS_URL}{raised['open'].pk}/resolve/", **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html and html.lstrip().startswith('<div id="flag-lists">')
    assert "No open flags." in html
    assert login(admin_user).get(FLAGS_URL, **HTMX).content.decode().lstrip().startswith('<div id="flag-lists">')


def test_flags_pages_are_for_admins(raised: dict[str, SampleFlag], project: Project, alice: Any, charlie: Any,
                                    admin_user: Any) -> None:
    auditor = get_user_model().objects.create_user(username="audrey")
    Membership.objects.create(project=project, user=auditor, role=Membership.Role.AUDITOR)
    resolve = f"{FLAGS_URL}{raised['open'].pk}/resolve/"
    assert login(alice).get(FLAGS_URL).status_code == 403
    assert login(auditor).get(FLAGS_URL).status_code == 403
    assert login(alice).post(resolve).status_code == 403
    assert login(charlie).get(FLAGS_URL).status_code == 404
    assert login(charlie).post(resolve).status_code == 404
    assert login(admin_user).post(FLAGS_URL).status_code == 405
    assert login(admin_user).get(resolve).status_code == 405
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=admin_user, role=Membership.Role.ADMIN)
    assert login(admin_user).post(f"/projects/other/flags/{raised['open'].pk}/resolve/").status_code == 404
    raised["open"].refresh_from_db()
    assert raised["open"].resolved_at is None


def test_project_page_links_flags_and_labels_for_admins(project: Project, admin_user: Any, alice: Any) -> None:
    admin_page = login(admin_user).get("/projects/demo/").content.decode()
    assert 'href="/projects/demo/flags/" data-role="flags"' in admin_page
    assert 'href="/projects/demo/labels/" data-role="label-set"' in admin_page
    assert 'data-role="flags"' not in login(alice).get("/projects/demo/").content.decode()
