"""Downloading judgements and audits from the pages and the API: admins get every run's judgements (or one run's)
and every auditor's audits, an auditor their own audits only, annotators nothing; bad choices are a 400 naming
them; the downloads stream what the export_judgements command writes."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotate.models import Batch, Membership, Project
from judging.models import Audit, AuditItem
from judging.services.export import AUDIT_FIELDS, JUDGEMENT_FIELDS
from tests.conftest import login
from tests.judging.audit_helpers import judge_sample, make_auditor, make_judge, make_run


@pytest.fixture
def scene(batch: Batch) -> dict[str, Any]:
    """Two runs (3 and 1 judgements); audrey answered one audit and holds another unanswered, grace answered one."""
    project = batch.project
    s0, s1, s2 = batch.samples.order_by("position")
    judge = make_judge(project, "gpt-test", api_key_env="OPENAI_API_KEY")
    first, second = make_run(judge), make_run(judge)
    for sample, score in ((s0, 2), (s1, 4), (s2, 5)):
        judge_sample(first, sample, score=score, reasoning=f"reasoning on {sample.external_id}")
    judge_sample(second, s0, score=3)
    audrey, grace = make_auditor(project, "audrey"), make_auditor(project, "grace")
    now = timezone.now()
    items = [AuditItem.objects.create(project=project, sample=sample) for sample in (s0, s1)]
    Audit.objects.create(item=items[0], auditor=audrey, score=2, note="audrey's", served_at=now - timedelta(seconds=9),
                         answered_at=now, seconds=9.0)
    Audit.objects.create(item=items[1], auditor=audrey, served_at=now)  # served, not answered: no verdict yet
    Audit.objects.create(item=items[0], auditor=grace, score=5, agreed=True, note="grace's",
                         served_at=now - timedelta(seconds=4), answered_at=now, seconds=4.0)
    return {"project": project, "runs": (first, second), "audrey": audrey, "grace": grace}


def page_url(what: str, slug: str = "demo") -> str:
    return reverse(f"judging-export-{what}", args=[slug])


def api_url(what: str, slug: str = "demo") -> str:
    return f"/api/projects/{slug}/{what}/export/"


def body(response: Any) -> str:
    assert response.streaming, "a download is streamed, never built whole in the web process"
    return b"".join(response.streaming_content).decode()


def jsonl(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body(response).splitlines()]


def csv_rows(response: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(body(response), newline="")))


# --------------------------------------------------------------------------- the pages


@pytest.mark.django_db
def test_admins_download_every_runs_judgements_or_one_runs(scene: dict[str, Any], admin_user: Any) -> None:
    first, second = scene["runs"]
    admin = login(admin_user)
    every = admin.get(page_url("judgements"), {"format": "jsonl"})
    assert every.status_code == 200
    assert every["Content-Type"] == "application/jsonl; charset=utf-8"
    assert every["Content-Disposition"] == 'attachment; filename="demo-judgements.jsonl"'
    rows = jsonl(every)
    assert [(row["run"], row["sample"], row["score"]) for row in rows] == [
        (first.pk, "0", 2), (first.pk, "1", 4), (first.pk, "2", 5), (second.pk, "0", 3)]
    assert all(tuple(row) == JUDGEMENT_FIELDS for row in rows)
    assert "OPENAI_API_KEY" not in json.dumps(rows)  # not even the key's variable name

    one = admin.get(page_url("judgements"), {"format": "csv", "run": str(first.pk)})
    assert one.status_code == 200 and one["Content-Type"] == "text/csv; charset=utf-8"
    assert one["Content-Disposition"] == f'attachment; filename="demo-run-{first.pk}-judgements.csv"'
    rows_csv = csv_rows(one)
    assert [(row["run"], row["sample"], row["reasoning"]) for row in rows_csv] == [
        (str(first.pk), "0", "reasoning on 0"), (str(first.pk), "1", "reasoning on 1"),
        (str(first.pk), "2", "reasoning on 2")]
    # No format given: JSONL, as the command's default.
    assert admin.get(page_url("judgements"))["Content-Type"] == "application/jsonl; charset=utf-8"


@pytest.mark.django_db
def test_admins_get_every_auditors_answered_audits_and_an_auditor_only_their_own(
    scene: dict[str, Any], admin_user: Any
) -> None:
    every = login(admin_user).get(page_url("audits"), {"format": "csv"})
    assert every.status_code == 200
    assert every["Content-Disposition"] == 'attachment; filename="demo-audits.csv"'
    rows = csv_rows(every)
    assert tuple(rows[0]) == AUDIT_FIELDS
    assert sorted((row["auditor"], row["score"], row["note"]) for row in rows) == [
        ("audrey", "2", "audrey's"), ("grace", "5", "grace's")]

    own = login(scene["audrey"]).get(page_url("audits"), {"format": "jsonl"})
    assert own.status_code == 200
    assert own["Content-Disposition"] == 'attachment; filename="demo-my-audits.jsonl"'
    assert [(row["auditor"], row["score"], row["note"]) for row in jsonl(own)] == [("audrey", 2, "audrey's")]


@pytest.mark.django_db
def test_auditors_may_not_download_judgements_and_annotators_nothing(
    scene: dict[str, Any], alice: Any, charlie: Any
) -> None:
    refused = login(scene["audrey"]).get(page_url("judgements"))
    assert refused.status_code == 403
    for what in ("judgements", "audits"):
        assert login(alice).get(page_url(what)).status_code == 403  # annotators work blind
        assert login(charlie).get(page_url(what)).status_code == 404  # outsiders: no such project
        anonymous = Client().get(page_url(what))
        assert anonymous.status_code == 302 and anonymous["Location"].startswith("/accounts/login/")
        assert login(scene["audrey"]).post(page_url(what)).status_code == 405


@pytest.mark.django_db
def test_a_pairs_project_has_nothing_to_download(admin_user: Any) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=admin_user, role=Membership.Role.ADMIN)
    assert login(admin_user).get(page_url("judgements", "pairs")).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("what", "query", "named"),
    [
        ("judgements", {"format": "xml"}, "format: format must be one of jsonl, csv, not 'xml'"),
        ("judgements", {"run": "999999"}, "run: no judge run '999999' in project 'demo'"),
        ("judgements", {"run": "abc"}, "run: no judge run 'abc' in project 'demo'"),
        ("judgements", {"run": "9" * 30}, "run: no judge run"),
        ("audits", {"run": "1"}, "run: a run narrows judgements, not audits"),
    ],
)
def test_a_choice_that_cannot_be_used_is_a_400_naming_it(
    scene: dict[str, Any], admin_user: Any, what: str, query: dict[str, str], named: str
) -> None:
    response = login(admin_user).get(page_url(what), query)
    assert response.status_code == 400
    assert not response.streaming
    assert named in response.content.decode()


@pytest.mark.django_db
def test_a_run_of_another_project_is_not_exported(scene: dict[str, Any], admin_user: Any) -> None:
    other = Project.objects.create(name="Other", slug="other")
    foreign = make_run(make_judge(other, "elsewhere"))
    response = login(admin_user).get(page_url("judgements"), {"run": str(foreign.pk)})
    assert response.status_code == 400 and f"no judge run '{foreign.pk}' in project 'demo'" in response.content.decode()


@pytest.mark.django_db
def test_the_judges_page_offers_every_run_and_the_audits(scene: dict[str, Any], admin_user: Any) -> None:
    first, second = scene["runs"]
    page = login(admin_user).get(reverse("judging-judges", args=["demo"])).content.decode()
    assert f'action="{page_url("judgements")}"' in page
    for run in (first, second):
        assert f'<option value="{run.pk}">run {run.pk} · gpt-test' in page
    assert f'href="{page_url("audits")}?format=csv"' in page and f'href="{page_url("audits")}?format=jsonl"' in page


@pytest.mark.django_db
def test_the_audit_page_links_an_auditor_to_their_own_audits(scene: dict[str, Any], admin_user: Any) -> None:
    mine = login(scene["audrey"]).get(reverse("judging-audit", args=["demo"])).content.decode()
    assert "Your answered audits" in mine and f'href="{page_url("audits")}?format=csv"' in mine
    every = login(admin_user).get(reverse("judging-audit", args=["demo"])).content.decode()
    assert "Every auditor&#x27;s answered audits" in every or "Every auditor's answered audits" in every


# --------------------------------------------------------------------------- the API


@pytest.mark.django_db
def test_the_api_streams_the_same_downloads(scene: dict[str, Any], admin_user: Any) -> None:
    first, _ = scene["runs"]
    admin = login(admin_user)
    one = admin.get(api_url("judgements"), {"format": "csv", "run": first.pk})
    assert one.status_code == 200 and one["Content-Type"] == "text/csv; charset=utf-8"
    assert one["Content-Disposition"] == f'attachment; filename="demo-run-{first.pk}-judgements.csv"'
    assert [row["sample"] for row in csv_rows(one)] == ["0", "1", "2"]
    assert len(jsonl(admin.get(api_url("judgements")))) == 4
    assert len(jsonl(admin.get(api_url("audits")))) == 2
    own = login(scene["grace"]).get(api_url("audits"), {"format": "jsonl"})
    assert own.status_code == 200
    assert [(row["auditor"], row["agreed"]) for row in jsonl(own)] == [("grace", True)]


@pytest.mark.django_db
def test_the_api_answers_roles_and_bad_choices_in_its_shapes(
    scene: dict[str, Any], admin_user: Any, alice: Any, charlie: Any
) -> None:
    assert login(scene["audrey"]).get(api_url("judgements")).status_code == 403
    for what in ("judgements", "audits"):
        assert login(alice).get(api_url(what)).status_code == 403
        assert login(charlie).get(api_url(what)).status_code == 404
        assert Client().get(api_url(what)).status_code == 401
    admin = login(admin_user)
    bad_format = admin.get(api_url("audits"), {"format": "xml"})
    assert bad_format.status_code == 400 and list(bad_format.json()) == ["format"]
    missing = admin.get(api_url("judgements"), {"run": 999999})
    assert missing.status_code == 400
    assert missing.json() == {"run": ["no judge run '999999' in project 'demo'"]}


@pytest.mark.django_db
def test_the_schema_describes_the_downloads(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    for what, query in (("judgements", {"format", "bom", "run"}), ("audits", {"format", "bom"})):
        operation = paths[f"/api/projects/{{slug}}/{what}/export/"]["get"]
        assert set(operation["responses"]) == {"200", "400", "401", "403", "404"}
        assert set(operation["responses"]["200"]["content"]) == {"application/jsonl", "text/csv"}
        assert {p["name"] for p in operation["parameters"] if p["in"] == "query"} == query
        formats = next(p for p in operation["parameters"] if p["name"] == "format")
        assert sorted(formats["schema"]["enum"]) == ["csv", "jsonl"]


@pytest.mark.django_db
def test_the_download_is_what_the_command_writes(scene: dict[str, Any], admin_user: Any, tmp_path: Any) -> None:
    out = tmp_path / "judgements.csv"
    call_command("export_judgements", project="demo", what="judgements", format="csv", out=out, stdout=io.StringIO())
    downloaded = body(login(admin_user).get(page_url("judgements"), {"format": "csv"}))
    assert downloaded == out.read_bytes().decode("utf-8")  # CSV rows end in \r\n in both
