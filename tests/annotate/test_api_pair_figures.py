"""A pairs project's figures on the API: agreement per round and overall, and one round with its detector metrics.

The values are checked against what the pages and the ``pair_agreement`` command show for the same data, not
against numbers written here: the demo's judged round 1 (annotate.services.pairs.demo) plus a judged round 2 for
agreement, and the round-page tests' detector project for the metrics. (test_api_pairs_figures.py is the other
way round: the span figures asked of a pairs project.)
"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import jsonschema
import pytest
from django.core.management import call_command
from django.test import Client

from annotate.models import Membership, PairItem, PairRound, Project
from annotate.pairmath.metrics import METRIC_KEYS
from annotate.services.pairs import config, queue, rounds
from annotate.services.pairs.agreement import pair_agreement
from annotate.services.pairs.demo import DEMO_PAIR_JUDGES, DEMO_PAIR_LABELERS, DEMO_PAIRS_SLUG, load_pair_demo
from tests.conftest import login, make_user
from tests.pairs import conftest as pair_fixtures
from tests.pairs import page_helpers
from tests.pairs.page_helpers import answer
from tests.queries import counted

pytestmark = pytest.mark.django_db

# The round-page tests' fixtures (tests/pairs/conftest.py covers tests/pairs only): a pairs project "pairs" (adam
# admin, alice and bob annotators) and, on it, round 1 done with a pool the detector scores.
pairs_project = pair_fixtures.pairs_project
detector_project = page_helpers.detector_project

AGREEMENT = f"/api/projects/{DEMO_PAIRS_SLUG}/pair-agreement/"
# Round 2 of the demo-like project: each item's answers by carol, dave, erin and frank.
ROUND_TWO_ANSWERS = ["HHHH", "NNNH", "NNNN", "HNHH", "NHNN", "HHNH"]


def as_json(value: Any) -> Any:
    """What a value becomes on the wire (tuples to lists, None to null), to compare with an API body."""
    return json.loads(json.dumps(value))


def pair_agreement_command(*args: str) -> dict[str, Any]:
    out = StringIO()
    call_command("pair_agreement", "--project", DEMO_PAIRS_SLUG, "--json", *args, stdout=out)
    return json.loads(out.getvalue())


def member(project: Project, username: str, role: str) -> Any:
    user = make_user(username)
    Membership.objects.create(project=project, user=user, role=role)
    return user


@pytest.fixture
def demo_pairs(admin_user: Any, alice: Any, bob: Any) -> Project:
    """The demo's pairs project (round 1 drawn, 26 items judged, frank a spammer) and a round 2 judged by its judges.

    Round 3 is open with nothing judged yet: every figure of it is undefined.
    """
    people = {"alice": alice, "bob": bob, **{name: make_user(name) for name in DEMO_PAIR_JUDGES}}
    assert set(people) == {*DEMO_PAIR_LABELERS, *DEMO_PAIR_JUDGES}
    project = load_pair_demo(admin_user, people)
    second = PairRound.objects.create(project=project, number=2, size=len(ROUND_TWO_ANSWERS), seed=2)
    settings = config.get_config(project)
    pool = list(PairItem.objects.filter(project=project, state=PairItem.State.POOL).order_by("id"))
    chosen = pool[:len(ROUND_TWO_ANSWERS)]
    PairItem.objects.filter(pk__in=[item.pk for item in chosen]).update(
        round=second, state=PairItem.State.OPEN, judges_needed=settings.judges_per_item
    )
    for item, labels in zip(chosen, ROUND_TWO_ANSWERS, strict=True):
        item.round = second
        for name, label in zip(DEMO_PAIR_JUDGES, labels, strict=True):
            answer(item, people[name], label)
    queue.recount_items([item.pk for item in chosen], settings)
    third = PairRound.objects.create(project=project, number=3, size=2, seed=3)
    PairItem.objects.filter(pk__in=[item.pk for item in pool[len(ROUND_TWO_ANSWERS):][:2]]).update(
        round=third, state=PairItem.State.OPEN, judges_needed=settings.judges_per_item
    )
    return project


# --------------------------------------------------------------------------- agreement


def test_agreement_is_the_commands_and_the_pages_per_round_and_overall(demo_pairs: Project, admin_user: Any) -> None:
    client = login(admin_user)
    response = client.get(AGREEMENT)
    assert response.status_code == 200
    report = response.json()
    assert report == pair_agreement_command() == as_json(pair_agreement(demo_pairs))
    assert report["round"] is None and [entry["round"] for entry in report["rounds"]] == [1, 2, 3]
    assert report["items"] > len(ROUND_TWO_ANSWERS) and report["alpha"] is not None  # figures, not placeholders
    page = client.get(f"/projects/{DEMO_PAIRS_SLUG}/")
    assert as_json(page.context["overall_agreement"]) == report
    assert [as_json(row["agreement"]) for row in page.context["rounds"]] == report["rounds"]
    for number in (1, 2, 3):
        one = client.get(f"{AGREEMENT}?round={number}")
        assert one.status_code == 200
        assert one.json() == pair_agreement_command("--round", str(number))
        round_page = client.get(f"/projects/{DEMO_PAIRS_SLUG}/pairs/rounds/{number}/")
        assert as_json(round_page.context["agreement"]) == one.json()
        listed = next(entry for entry in report["rounds"] if entry["round"] == number)
        assert one.json() == listed


def test_an_undefined_figure_is_null_with_its_reason_never_zero_or_nan(demo_pairs: Project, admin_user: Any) -> None:
    response = login(admin_user).get(f"{AGREEMENT}?round=3")
    assert b"NaN" not in response.content
    body = response.json()
    assert body["items"] == 0
    assert all(body[key] is None for key in ("alpha", "consensus", "agree80", "unanimous", "no_consensus"))
    assert body["reason"] == pair_agreement(demo_pairs, 3)["reason"]
    assert "no item has finished judging" in body["reason"]


@pytest.mark.parametrize(
    ("query", "message"),
    [("round=", "round is empty: send a whole number, or leave round out"), ("round=x", "A valid integer"),
     ("round=0", "greater than or equal to 1"), ("round=9", "has no round 9 (rounds: 1, 2, 3)")],
)
def test_a_bad_round_is_a_400_naming_it(demo_pairs: Project, admin_user: Any, query: str, message: str) -> None:
    response = login(admin_user).get(f"{AGREEMENT}?{query}")
    assert response.status_code == 400
    assert list(response.json()) == ["round"] and message in response.json()["round"][0]


def test_an_unknown_query_parameter_is_ignored_as_on_the_other_endpoints(demo_pairs: Project, admin_user: Any) -> None:
    client = login(admin_user)
    assert client.get(f"{AGREEMENT}?colour=red").json() == client.get(AGREEMENT).json()


def test_agreement_is_for_the_pages_roles(demo_pairs: Project, admin_user: Any, alice: Any, charlie: Any) -> None:
    auditor = member(demo_pairs, "audrey", Membership.Role.AUDITOR)
    curator = member(demo_pairs, "cora", Membership.Role.CURATOR)
    for reviewer in (admin_user, auditor, curator):
        assert login(reviewer).get(AGREEMENT).status_code == 200, reviewer.username
        # The page shows them the same figures.
        assert "overall_agreement" in login(reviewer).get(f"/projects/{DEMO_PAIRS_SLUG}/").context
    refused = login(alice).get(AGREEMENT)
    assert refused.status_code == 403 and "Annotators work blind" in refused.json()["detail"]
    assert login(alice).get(f"/projects/{DEMO_PAIRS_SLUG}/pairs/rounds/1/").status_code == 403  # the page's rule
    assert login(charlie).get(AGREEMENT).status_code == 404
    assert Client().get(AGREEMENT).status_code == 401


# --------------------------------------------------------------------------- one round: metrics and balance


ROUND_LIST = "/api/projects/pairs/pair-rounds/"


def round_url(number: int | str) -> str:
    return f"{ROUND_LIST}{number}/"


def judged_detector_round(project: Project, admin: Any, *, labels: str | None = None) -> PairRound:
    """Round 2, drawn by a trained detector; its items reach consensus with ``labels`` (default: the predicted class,
    with the first item's flipped, so that the detector errs once)."""
    pair_round = rounds.create_round(project, admin, size=8, low=0.1, high=0.9, paraphrase_max=1.0,
                                     drop_fraction=0.0, seed=3)
    drawn = list(pair_round.items.order_by("pk"))
    for index, item in enumerate(drawn):
        if labels is not None:
            label = labels[index % len(labels)]
        else:
            label = item.selection["predicted"]
            if index == 0:
                label = "N" if label == "H" else "H"
        PairItem.objects.filter(pk=item.pk).update(state=PairItem.State.CONSENSUS, label=label)
    return pair_round


def page_context(admin: Any, number: int) -> Any:
    response = login(admin).get(f"/projects/pairs/pairs/rounds/{number}/")
    assert response.status_code == 200
    return response.context


def test_a_rounds_detector_metrics_and_balance_are_the_round_pages(detector_project: Project,
                                                                   admin_user: Any) -> None:
    pair_round = judged_detector_round(detector_project, admin_user)
    response = login(admin_user).get(round_url(2))
    assert response.status_code == 200
    body = response.json()
    report = rounds.round_report(pair_round)
    evaluation = body["detector_metrics"]
    assert evaluation["metrics"] == as_json(report["metrics"]) and set(evaluation["metrics"]) == set(METRIC_KEYS)
    assert evaluation["detector"] == as_json(report["detector"]) and evaluation["detector"]["number"] == 1
    assert 0 < evaluation["metrics"]["accuracy"] < 1 and evaluation["undefined"] == {}
    context = page_context(admin_user, 2)
    for row in context["metric_rows"]:
        value = evaluation["metrics"][row["key"]]
        assert row["value"] == (value if row["key"] == "n" else f"{value:.3f}"), row["key"]
    balance = body["balance"]
    h, n = balance["h"], balance["n"]
    assert h + n == 8 and balance["h_share"] == h / 8 and balance["undefined"] == {}
    assert balance["promised_h_share"] == pair_round.promised_h_share
    assert context["balance"]["reached"] == f"{100 * balance['h_share']:.2f}% H ({h} H, {n} N)"
    # The entry of the round list rides along, and the round's agreement is the agreement endpoint's.
    listed = next(row for row in login(admin_user).get(ROUND_LIST).json() if row["number"] == 2)
    assert {key: body[key] for key in listed} == listed
    assert body["agreement"] == login(admin_user).get("/api/projects/pairs/pair-agreement/?round=2").json()


def test_an_undefined_metric_is_null_with_the_reason_the_page_gives(detector_project: Project,
                                                                    admin_user: Any) -> None:
    judged_detector_round(detector_project, admin_user, labels="H")  # no N item: N's recall, G-mean and AUC
    evaluation = login(admin_user).get(round_url(2)).json()["detector_metrics"]
    undefined = {key for key, value in evaluation["metrics"].items() if value is None}
    assert {"recall_n", "g_mean", "auc"} <= undefined
    assert set(evaluation["undefined"]) == undefined
    why = {row["key"]: row["why"] for row in page_context(admin_user, 2)["metric_rows"] if row["value"] is None}
    assert why == evaluation["undefined"]


def test_round_one_has_no_detector_and_promised_nothing_and_says_why(detector_project: Project,
                                                                     admin_user: Any) -> None:
    body = login(admin_user).get(round_url(1)).json()
    evaluation, balance = body["detector_metrics"], body["balance"]
    assert evaluation["detector"] is None and evaluation["metrics"] is None and evaluation["undefined"] == {}
    context = page_context(admin_user, 1)
    assert evaluation["reason"] == context["metrics_intro"] and "round 1 is drawn at random" in evaluation["reason"]
    assert balance["promised_h_share"] is None and balance["h_share"] == 0.5  # 20 H, 20 N
    assert context["balance"]["promised"] == f"— ({balance['undefined']['promised_h_share']})"
    assert set(balance["undefined"]) == {"promised_h_share"}


def test_a_round_is_for_members_and_its_figures_for_reviewers(detector_project: Project, admin_user: Any,
                                                              alice: Any, charlie: Any) -> None:
    judged_detector_round(detector_project, admin_user)
    mine = login(alice).get(round_url(2))
    assert mine.status_code == 200
    listed = next(row for row in login(alice).get(ROUND_LIST).json() if row["number"] == 2)
    assert mine.json() == listed  # the round list's entry, nothing more: annotators work blind
    assert not {"detector_metrics", "balance", "agreement", "funnel", "items_by_state"} & set(mine.json())
    auditor = member(detector_project, "audrey", Membership.Role.AUDITOR)
    assert "detector_metrics" in login(auditor).get(round_url(2)).json()
    assert login(charlie).get(round_url(2)).status_code == 404
    assert Client().get(round_url(2)).status_code == 401
    for number in ("7", "0", "99999999"):
        missing = login(admin_user).get(round_url(number))
        assert missing.status_code == 404, number
        assert missing.json()["detail"] == f"'pairs' has no round {number} (rounds: 1, 2)"


# --------------------------------------------------------------------------- a span project, the list, the schema


@pytest.mark.parametrize("path", ["pair-agreement/", "pair-agreement/?round=1", "pair-rounds/1/"])
def test_a_span_project_is_a_400_naming_its_kind(project: Project, admin_user: Any, alice: Any, charlie: Any,
                                                  path: str) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    template = "/api/projects/{slug}/" + ("pair-rounds/{number}/" if path.startswith("pair-rounds") else
                                          "pair-agreement/")
    documented = document["paths"][template]["get"]["responses"]["400"]["content"]["application/json"]["schema"]
    for caller in (admin_user, alice):  # every member, whatever the role
        response = login(caller).get(f"/api/projects/demo/{path}")
        assert response.status_code == 400
        body = response.json()
        jsonschema.validate(body, documented)
        assert list(body) == ["project"] and len(body["project"]) == 1
        assert body["project"][0].startswith("'demo' is a spans project (span annotation)")
        assert "/api/projects/demo/agreement/" in body["project"][0]
    assert login(charlie).get(f"/api/projects/demo/{path}").status_code == 404


def test_the_round_list_does_not_grow_in_queries_with_its_rounds(detector_project: Project, admin_user: Any) -> None:
    client = login(admin_user)
    client.get(ROUND_LIST)  # the session and the user, read once

    def queries() -> int:
        with counted() as statements:
            assert client.get(ROUND_LIST).status_code == 200
        return len(statements)

    before = queries()
    for number in (2, 3, 4):
        PairRound.objects.create(project=detector_project, number=number, size=1, seed=number)
    assert len(client.get(ROUND_LIST).json()) == 4
    assert queries() == before


def test_the_schema_documents_both_with_their_response_serializers(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    schemas = document["components"]["schemas"]
    agreement = document["paths"]["/api/projects/{slug}/pair-agreement/"]["get"]
    assert set(agreement["responses"]) == {"200", "400", "401", "403", "404"}
    assert {p["name"] for p in agreement["parameters"] if p["in"] == "query"} == {"round"}
    assert agreement["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/PairAgreementReport"}
    detail = document["paths"]["/api/projects/{slug}/pair-rounds/{number}/"]["get"]
    assert set(detail["responses"]) == {"200", "400", "401", "404"}
    assert detail["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/PairRoundDetail"}
    assert set(schemas["DetectorMetrics"]["properties"]) == set(METRIC_KEYS)
    assert {"agreement", "detector_metrics", "balance"} <= set(schemas["PairRoundDetail"]["properties"])
    assert set(schemas["PairRoundRow"]["properties"]) <= set(schemas["PairRoundDetail"]["properties"])
