"""The judge-vs-people figures and a synthetic set's tables through the API: the page's and the command's objects.

GET /api/projects/<slug>/judges/<id>/people/ answers what the judge-vs-people page shows, and
GET /api/projects/<slug>/synthetic-sets/<id>/tables/ what the set page shows and ``judge_tables --json`` prints:
both are compared with those on the same small case, and with figures worked out by hand. Only the project's admins
read them (as the pages); the answers are checked against the live OpenAPI schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from io import StringIO
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotate.models import Batch, Membership, Project
from annotate.services import tokens
from judging.models import Audit, AuditItem, Judge, Judgement, SyntheticItem, SyntheticSet
from judging.services.synthetic import import_rewrites
from tests.conftest import login, make_user
from tests.judging.audit_helpers import judge_sample, make_auditor, make_judge, make_run
from tests.judging.synthetic_scene import add_outputs, rewrite_of

pytestmark = pytest.mark.django_db

G1 = ["Lintown's Harbour Bridge reopened on Tuesday.", "Repairs took eight weeks.",
      "Engineers replaced 140 cables 🌉.", "The work cost 12.4 million euros.",
      "The speed limit is 30 km/h until March."]
HUGE = "999999999999999999"  # matches the route, names nothing


def people_url(judge: Judge, slug: str | None = None) -> str:
    return f"/api/projects/{slug or judge.project.slug}/judges/{judge.pk}/people/"


def tables_url(synthetic_set: SyntheticSet, slug: str | None = None) -> str:
    return f"/api/projects/{slug or synthetic_set.project.slug}/synthetic-sets/{synthetic_set.pk}/tables/"


def as_json(value: Any) -> Any:
    """What a page's or command's object becomes once written as JSON (tuples as lists, keys as strings)."""
    return json.loads(json.dumps(value))


# --------------------------------------------------------------------------- the small cases


@dataclass
class PeopleCase:
    project: Project
    judge: Judge
    auditor: Any


@pytest.fixture
def people_case(project: Project, batch: Batch, admin_user: Any) -> PeopleCase:
    """A rubric judge scored the three outputs 2, 5, 3 (all flagged at <= 3 but 5); the auditor grace and the admin
    answered (1, 2), (5, 4) and (4, unanswered): the judge-vs-people page test's case."""
    auditor = make_auditor(project)
    judge = make_judge(project, "gpt-judge")
    run = make_run(judge)
    samples = list(batch.samples.order_by("position"))
    for sample, score in zip(samples, (2, 5, 3), strict=True):
        judge_sample(run, sample, score=score)
    for sample, scores in zip(samples, ((1, 2), (5, 4), (4, None)), strict=True):
        item = AuditItem.objects.create(project=project, sample=sample, reason="test")
        for who, score in zip((auditor, admin_user), scores, strict=True):
            Audit.objects.create(item=item, auditor=who, score=score, served_at=timezone.now())
    return PeopleCase(project, judge, auditor)


def rewrites_file() -> bytes:
    records = [{"sample": "g1", "sentence": index, "type": "intrinsic", "rewritten": rewrite_of("intrinsic", s)}
               for index, s in enumerate(G1)]
    # g2 has one extrinsic rewrite only: its gold item is built, its extrinsic items are not.
    records.append({"sample": "g2", "sentence": 0, "type": "extrinsic", "rewritten": "The bridge reopened at dawn."})
    return "\n".join(json.dumps(record, ensure_ascii=False) for record in records).encode()


@pytest.fixture
def judged_set(project: Project) -> SyntheticSet:
    """g1 gold and its five intrinsic items, g2 gold. An LLM judge scored 5, 4 | 4, 3, 2, (parse error), 1; an NLI
    judge p = 0.75 on every item (1 + 4p = 4), one of them from the call cache."""
    add_outputs(project)
    synthetic_set = import_rewrites(project, "api-set", rewrites_file(), "rewrites.jsonl", seed=2)
    llm = make_judge(project, "llm-judge", with_reasoning=False)
    nli = make_judge(project, "nli-judge", Judge.Kind.NLI, nli_model_path="/models/tiny")
    llm_run, nli_run = (make_run(judge, scope="synthetic", synthetic_set=synthetic_set) for judge in (llm, nli))
    scores = {("g1", "gold", 0): 5, ("g2", "gold", 0): 4, ("g1", "intrinsic", 20): 4, ("g1", "intrinsic", 40): 3,
              ("g1", "intrinsic", 60): 2, ("g1", "intrinsic", 80): None, ("g1", "intrinsic", 100): 1}
    items = SyntheticItem.objects.filter(synthetic_set=synthetic_set).select_related("sample").order_by("id")
    for item in items:
        score = scores[(item.sample.external_id, item.type, item.percent)]
        Judgement.objects.create(run=llm_run, synthetic_item=item, status="ok" if score else "parse_error",
                                 score=score, latency_seconds=2.0, output_tokens=8, cost=0.001)
        Judgement.objects.create(run=nli_run, synthetic_item=item, status="ok", probability=0.75,
                                 latency_seconds=0.01, cached=item.type == "gold" and item.sample.external_id == "g2")
    return synthetic_set


# --------------------------------------------------------------------------- the same figures as the page


def test_the_people_figures_are_the_pages(people_case: PeopleCase, admin_user: Any) -> None:
    admin = login(admin_user)
    page = admin.get(reverse("judging-people", args=[people_case.project.slug, people_case.judge.pk]))
    assert page.status_code == 200
    answer = admin.get(people_url(people_case.judge))
    assert answer.status_code == 200
    figures = answer.json()
    assert figures == as_json(page.context["figures"])  # every key the page has, with the same value
    # By hand (the page test's case): judge 2 vs 1 and 2; judge 5 vs 5 and 4; judge 3 vs 4.
    confusion = figures["confusion"]
    assert {(j + 1, a + 1): n for j, row in enumerate(confusion) for a, n in enumerate(row) if n} == {
        (2, 1): 1, (2, 2): 1, (5, 5): 1, (5, 4): 1, (3, 4): 1}
    assert figures["mean_residual"] == pytest.approx(-0.2)  # (-1, 0, 0, -1, 1) / 5
    assert figures["mean_absolute_residual"] == pytest.approx(0.6)
    # Flagged (score <= 3): outputs 0 (median 1.5, confirmed) and 2 (median 4, not).
    assert (figures["flags_confirmed"], figures["flags_confirmed_count"], figures["flags_audited"]) == (0.5, 1, 2)
    assert (figures["items"], figures["pairs"], figures["auditors"]) == (3, 5, 2)
    for level in ("ordinal", "interval"):
        assert isinstance(figures[f"alpha_{level}_with_judge"], float)
        assert isinstance(figures[f"alpha_{level}_auditors"], float)
    assert figures["reasons"] == {}
    assert figures["judge"] == {"id": people_case.judge.pk, "name": "gpt-judge", "kind": "rubric", "mode": "reasoning"}


def test_undefined_people_figures_are_null_with_their_reason_never_zero(
    people_case: PeopleCase, admin_user: Any
) -> None:
    silent = make_judge(people_case.project, "never-ran")  # no judgement of any audited output
    admin = login(admin_user)
    figures = admin.get(people_url(silent)).json()
    page = admin.get(reverse("judging-people", args=[people_case.project.slug, silent.pk]))
    assert figures == as_json(page.context["figures"])
    undefined = {"alpha_ordinal_with_judge", "alpha_interval_with_judge", "mean_residual", "mean_absolute_residual",
                 "flags_confirmed"}
    for name in undefined:
        assert figures[name] is None, name
    assert set(figures["reasons"]) == undefined
    assert figures["reasons"]["mean_residual"] == "no audited item has a score from this judge"
    assert figures["reasons"]["flags_confirmed"] == "no flagged item has been audited"
    # The auditors' own agreement does not need the judge: both answered outputs 0 and 1.
    assert figures["alpha_interval_auditors"] is not None and figures["alpha_interval_auditors_items"] == 2
    assert figures["items_without_judge_score"] == 3 and sum(map(sum, figures["confusion"])) == 0


# --------------------------------------------------------------------------- the same tables as the page and command


def test_the_tables_are_the_pages_and_the_commands(judged_set: SyntheticSet, admin_user: Any) -> None:
    admin = login(admin_user)
    answer = admin.get(tables_url(judged_set))
    assert answer.status_code == 200
    tables = answer.json()
    page = admin.get(reverse("judging-synthetic-set", args=[judged_set.project.slug, judged_set.pk]))
    assert tables == as_json(page.context["tables"])
    printed = StringIO()
    call_command("judge_tables", "--project", judged_set.project.slug, "--set", "api-set", "--json", stdout=printed)
    assert tables == json.loads(printed.getvalue())
    # By hand, the LLM judge: residual gold (0 + 1) / 2, intrinsic (3 + 2 + 1 + 0) / 4, overall 7 / 6 over pairs.
    llm, nli = tables["residual"]["rows"]
    assert (llm["judge"], nli["judge"]) == ("llm-judge", "nli-judge")
    assert (llm["gold"], llm["intrinsic"], llm["overall"]) == (pytest.approx(0.5), pytest.approx(1.5),
                                                               pytest.approx(7 / 6))
    assert llm["extrinsic"] is None and llm["pairs"]["extrinsic"] == 0 and llm["failed"] == 1
    # Sensitivity: g1 gold 5 at 0%, 1 at 100%: delta (1 - 5) / 5; the parse error at 80% is no mean.
    llm_intrinsic = next(row for row in tables["sensitivity"]["rows"] if row["judge"] == "llm-judge")
    assert llm_intrinsic["delta"] == pytest.approx(-0.8)
    assert [step["mean"] for step in llm_intrinsic["steps"]] == [5, 4, 3, 2, None, 1]
    # Cost: the NLI judge reports no tokens and no price (null, not 0); one of its answers came from the cache.
    llm_cost, nli_cost = tables["cost"]["rows"]
    assert (llm_cost["calls"], llm_cost["parse_errors"], llm_cost["cost"]) == (7, 1, pytest.approx(0.001))
    assert (nli_cost["calls"], nli_cost["cached"], nli_cost["output_tokens"], nli_cost["cost"]) == (6, 1, None, None)
    assert [run["judge"] for run in tables["runs"]] == ["llm-judge", "nli-judge"]


def test_a_set_no_judge_ran_over_has_empty_tables(project: Project, admin_user: Any) -> None:
    add_outputs(project)
    fresh = import_rewrites(project, "fresh", rewrites_file(), "rewrites.jsonl")
    tables = login(admin_user).get(tables_url(fresh)).json()
    assert tables["runs"] == [] and tables["residual"]["rows"] == [] and tables["cost"]["rows"] == []
    assert tables["sensitivity"]["percents"] == [0, 20, 40, 60, 80, 100]


def test_the_set_list_names_each_set_and_where_its_tables_are(judged_set: SyntheticSet, admin_user: Any,
                                                               alice: Any, charlie: Any) -> None:
    # Before, a set's id (for its tables) could only be read from the set page's address.
    fresh = import_rewrites(judged_set.project, "fresh", rewrites_file(), "rewrites.jsonl")
    url = "/api/projects/demo/synthetic-sets/"
    rows = login(admin_user).get(url).json()
    assert [row["name"] for row in rows] == ["fresh", "api-set"]  # newest first
    assert [row["tables"] for row in rows] == [tables_url(fresh), tables_url(judged_set)]
    assert rows[1]["id"] == judged_set.pk and rows[1]["status"] == judged_set.status
    assert rows[1]["sentences_per_output"] == judged_set.sentences_per_output and rows[1]["seed"] == 2
    assert login(admin_user).get(rows[1]["tables"]).status_code == 200
    assert login(alice).get(url).status_code == 403 and login(charlie).get(url).status_code == 404
    assert Client().get(url).status_code == 401


# --------------------------------------------------------------------------- who may ask


@pytest.fixture
def both(people_case: PeopleCase, judged_set: SyntheticSet) -> list[str]:
    return [people_url(people_case.judge), tables_url(judged_set)]


def test_only_admins_read_them_as_on_the_pages(
    both: list[str], people_case: PeopleCase, admin_user: Any, alice: Any, charlie: Any
) -> None:
    for url in both:
        assert login(admin_user).get(url).status_code == 200, url
        for refused in (people_case.auditor, alice):  # auditors audit; annotators work blind
            answer = login(refused).get(url)
            assert answer.status_code == 403, (refused.username, url)
            assert "gpt-judge" not in answer.content.decode() and "alpha" not in answer.content.decode()
        assert login(charlie).get(url).status_code == 404, url  # an outsider: the project's existence is hidden
        anonymous = Client().get(url)
        assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token"


def test_an_object_of_another_project_or_none_at_all_is_not_found(
    people_case: PeopleCase, judged_set: SyntheticSet, admin_user: Any
) -> None:
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=admin_user, role=Membership.Role.ADMIN)
    admin = login(admin_user)
    assert admin.get(people_url(people_case.judge, "other")).status_code == 404
    assert admin.get(tables_url(judged_set, "other")).status_code == 404
    for url in (f"/api/projects/demo/judges/{HUGE}/people/", f"/api/projects/demo/synthetic-sets/{HUGE}/tables/",
                f"/api/projects/demo/judges/{HUGE}0/people/"):
        assert admin.get(url).status_code == 404, url


def test_unknown_and_empty_query_parameters_are_ignored_as_on_the_other_judging_reads(
    both: list[str], admin_user: Any
) -> None:
    admin = login(admin_user)
    judges = "/api/projects/demo/judges/"
    assert admin.get(judges + "?colour=blue&limit=").json() == admin.get(judges).json()
    for url in both:
        assert admin.get(url + "?colour=blue&round=").json() == admin.get(url).json()


@pytest.fixture
def pairs(admin_user: Any, alice: Any) -> Project:
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    Membership.objects.create(project=project, user=alice, role=Membership.Role.ANNOTATOR)
    Membership.objects.create(project=project, user=make_user("audrey"), role=Membership.Role.AUDITOR)
    return project


def test_a_pairs_projects_members_are_told_its_kind_and_outsiders_get_404(
    both: list[str], pairs: Project, charlie: Any
) -> None:
    urls = [url.replace("/projects/demo/", "/projects/pairs/") for url in both]
    members = [membership.user for membership in pairs.memberships.select_related("user")]
    assert len(members) == 3
    for url in urls:
        for member in members:  # whatever their role
            answer = login(member).get(url)
            assert answer.status_code == 400, (member.username, url)
            (message,) = answer.json()["project"]
            assert message.startswith("'pairs' is a pairs project (perturbed pairs): judges")
        assert login(charlie).get(url).status_code == 404
        assert Client().get(url).status_code == 401


# --------------------------------------------------------------------------- the answers are the schema's


@pytest.fixture
def wsgi_app() -> Iterator[WSGIHandler]:
    """Django's WSGI handler on this test's database connection (as tests/annotate/test_schema.py does)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_every_answer_is_one_the_schema_describes(
    wsgi_app: WSGIHandler, people_case: PeopleCase, judged_set: SyntheticSet, pairs: Project, admin_user: Any,
    alice: Any,
) -> None:
    silent = make_judge(people_case.project, "never-ran")
    admin_key = tokens.create_api_token(admin_user, "figures")[1]
    schema = schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app,
                                            headers={"Authorization": f"Token {admin_key}"})
    people = schema["/api/projects/{slug}/judges/{id}/people/"]["GET"]
    tables = schema["/api/projects/{slug}/synthetic-sets/{id}/tables/"]["GET"]
    sets = schema["/api/projects/{slug}/synthetic-sets/"]["GET"]
    keys = {"admin": admin_key, "annotator": tokens.create_api_token(alice, "figures")[1]}
    asked = [(people, {"slug": "demo", "id": people_case.judge.pk}), (people, {"slug": "demo", "id": silent.pk}),
             (people, {"slug": "pairs", "id": people_case.judge.pk}), (tables, {"slug": "demo", "id": judged_set.pk}),
             (tables, {"slug": "pairs", "id": judged_set.pk}), (tables, {"slug": "demo", "id": int(HUGE)}),
             (sets, {"slug": "demo"}), (sets, {"slug": "pairs"})]
    statuses = set()
    for operation, path in asked:
        for key in keys.values():
            case = operation.Case(path_parameters=path)
            response = case.call_and_validate(headers={"Authorization": f"Token {key}"}, checks=CHECKS)
            statuses.add(response.status_code)
    assert statuses == {200, 400, 403, 404}
