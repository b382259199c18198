"""The pairs REST API: next item, answers with the next item embedded, undo, items, rounds, flags; roles and the blind rule."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from annotate.models import (
    BlockedJudge,
    JudgeFlag,
    Membership,
    PairConfig,
    PairItem,
    PairJudgement,
    PairRound,
    Project,
)
from annotate.services.pairs import queue
from tests.conftest import make_user
from tests.pairs.conftest import Clock, make_judges, make_pair_items

pytestmark = pytest.mark.django_db


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post_label(client: Client, item_id: int, label: Any) -> Any:
    return client.post(f"/api/pairs/{item_id}/judgements/", {"label": label}, content_type="application/json")


def next_item(client: Client, slug: str = "pairs") -> Any:
    return client.get(f"/api/pairs/next/?project={slug}")


def two_span_text(project: Project) -> tuple[PairItem, PairItem]:
    """One item from the factory and a second replaced span of the same perturbed text."""
    first = make_pair_items(project, 1)[0]
    text = first.perturbed.text
    start = text.index("two lanes")
    second = PairItem.objects.create(
        project=project, perturbed=first.perturbed, position=1, external_id="i0b",
        original_start=start, original_end=start + 9, original_words="two lanes",
        perturbed_start=start, perturbed_end=start + 9, perturbed_words="two lanes",
        state=PairItem.State.OPEN, round=first.round, judges_needed=4,
    )
    return first, second


# --------------------------------------------------------------------------- next


def test_next_item_shows_both_texts_the_spans_the_other_spans_and_progress(pairs_project: Project, alice: Any
                                                                         ) -> None:
    first, second = two_span_text(pairs_project)
    response = next_item(client_of(alice))
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == first.pk
    original, perturbed = body["original"], body["perturbed"]
    assert original == first.perturbed.original.text and perturbed == first.perturbed.text
    s, e = body["original_span"]
    assert original[s:e] == "Ines Varga" == body["original_words"]
    s, e = body["perturbed_span"]
    assert perturbed[s:e] == "Tom Price" == body["perturbed_words"]
    assert body["other_spans"] == [[second.perturbed_start, second.perturbed_end]]
    assert perturbed[slice(*body["other_spans"][0])] == "two lanes"
    assert body["progress"] == {"answered": 0, "left": 2}  # the served item counts until it is answered
    assert body["served_at"]
    # Asked again before answering: the same item, no second serve.
    assert next_item(client_of(alice)).json()["id"] == first.pk
    assert PairJudgement.objects.filter(judge=alice).count() == 1


def test_next_item_answers_204_when_nothing_is_left(pairs_project: Project, alice: Any) -> None:
    response = next_item(client_of(alice))
    assert response.status_code == 204 and response.content == b""


@pytest.mark.parametrize(
    ("path", "status", "key"),
    [("/api/pairs/next/", 400, "project"), ("/api/pairs/next/?project=nope", 404, "detail"),
     ("/api/pairs/next/?project=demo", 400, "project")],
)
def test_next_item_without_a_pairs_project_is_refused(pairs_project: Project, project: Project, alice: Any,
                                                      path: str, status: int, key: str) -> None:
    response = client_of(alice).get(path)  # "demo" is a span project alice belongs to: told its kind
    assert response.status_code == status and key in response.json()
    if "demo" in path:
        assert "'demo' is a spans project" in response.json()["project"][0]


def test_outsiders_get_404_auditors_403_blocked_judges_403_and_anonymous_401(
    pairs_project: Project, charlie: Any, bob: Any, admin_user: Any
) -> None:
    make_pair_items(pairs_project, 2)
    assert next_item(client_of(charlie)).status_code == 404
    auditor = make_user("audrey")
    Membership.objects.create(project=pairs_project, user=auditor, role=Membership.Role.AUDITOR)
    refused = next_item(client_of(auditor))
    assert refused.status_code == 403 and "annotators and admins" in refused.json()["detail"]
    BlockedJudge.objects.create(project=pairs_project, judge=bob, blocked_by=admin_user)
    blocked = next_item(client_of(bob))
    assert blocked.status_code == 403 and "blocked" in blocked.json()["detail"]
    anonymous = Client().get("/api/pairs/next/?project=pairs")
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Token"
    assert PairJudgement.objects.count() == 0


def test_a_judge_can_work_with_an_api_token(pairs_project: Project, alice: Any) -> None:
    from annotate.services.tokens import create_api_token

    make_pair_items(pairs_project, 1)
    token = create_api_token(alice, "script")[1]
    response = Client().get("/api/pairs/next/?project=pairs", HTTP_AUTHORIZATION=f"Token {token}")
    assert response.status_code == 200


# --------------------------------------------------------------------------- answering


def test_an_answer_is_201_and_carries_the_next_item(pairs_project: Project, alice: Any, clock: Clock) -> None:
    items = make_pair_items(pairs_project, 3)
    client = client_of(alice)
    first = next_item(client).json()
    clock.advance(14)
    response = post_label(client, first["id"], "H")
    assert response.status_code == 201
    body = response.json()
    assert body["item"] == items[0].pk and body["label"] == "H" and body["seconds"] == 14.0
    assert body["next"]["id"] == items[1].pk
    assert body["progress"] == {"answered": 1, "left": 2} == body["next"]["progress"]  # the next one and the last
    # The embedded item is the one served: next answers the same.
    assert next_item(client).json()["id"] == items[1].pk
    stored = PairJudgement.objects.get(judge=alice, item=items[0])
    assert (stored.label, stored.seconds) == ("H", 14.0)


def test_the_last_answer_carries_next_null(pairs_project: Project, alice: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    client = client_of(alice)
    next_item(client)
    body = post_label(client, item.pk, "?").json()
    assert body["next"] is None and body["progress"] == {"answered": 1, "left": 0}


def test_a_second_judgement_of_the_same_item_is_409_and_changes_nothing(pairs_project: Project, alice: Any) -> None:
    item = make_pair_items(pairs_project, 2)[0]
    client = client_of(alice)
    next_item(client)
    assert post_label(client, item.pk, "H").status_code == 201
    again = post_label(client, item.pk, "N")
    assert again.status_code == 409
    assert again.json()["code"] == "already_judged" and "already judged" in again.json()["detail"]
    item.refresh_from_db()
    assert (item.votes_h, item.votes_n) == (1, 0)
    assert PairJudgement.objects.get(judge=alice, item=item).label == "H"


def test_judging_an_item_not_served_to_you_is_409_saying_so(pairs_project: Project, alice: Any, bob: Any) -> None:
    items = make_pair_items(pairs_project, 2)
    next_item(client_of(bob))
    refused = post_label(client_of(alice), items[0].pk, "H")
    assert refused.status_code == 409
    assert refused.json() == {
        "detail": f"item {items[0].pk} was not served to you; ask for your next item and answer that one",
        "code": "not_served",
    }
    assert not PairJudgement.objects.filter(judge=alice).exists()


def test_a_late_answer_whose_slot_went_to_another_judge_is_409(pairs_project: Project, alice: Any, bob: Any,
                                                               clock: Clock) -> None:
    PairConfig.objects.filter(project=pairs_project).update(serve_minutes=1, judges_per_item=1, max_judges_per_item=1)
    item = make_pair_items(pairs_project, 1)[0]
    PairItem.objects.update(judges_needed=1)
    next_item(client_of(alice))
    clock.advance(61)
    assert next_item(client_of(bob)).json()["id"] == item.pk
    refused = post_label(client_of(alice), item.pk, "H")
    assert refused.status_code == 409 and refused.json()["code"] == "serve_expired"
    assert "expired after 1 minutes" in refused.json()["detail"]


@pytest.mark.parametrize("label", ["h", "X", "", "HN", None, 3])
def test_a_bad_label_is_400_naming_the_allowed_labels_and_changes_nothing(pairs_project: Project, alice: Any,
                                                                          label: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    client = client_of(alice)
    next_item(client)
    response = post_label(client, item.pk, label)
    assert response.status_code == 400
    message = " ".join(response.json()["label"])
    if label not in ("", None):
        assert "answer one of H, N, ?" in message
    judgement = PairJudgement.objects.get(judge=alice)
    assert judgement.label == "" and judgement.answered_at is None


def test_a_body_without_a_label_is_400(pairs_project: Project, alice: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    response = client_of(alice).post(f"/api/pairs/{item.pk}/judgements/", {}, content_type="application/json")
    assert response.status_code == 400 and response.json() == {"label": ["This field is required."]}


@pytest.mark.parametrize("item_id", ["999999", "99999999999999999"])
def test_an_unknown_item_is_404(pairs_project: Project, alice: Any, item_id: str) -> None:
    make_pair_items(pairs_project, 1)
    response = client_of(alice).post(f"/api/pairs/{item_id}/judgements/", {"label": "H"},
                                      content_type="application/json")
    assert response.status_code == 404


def test_outsiders_get_404_for_an_item_and_anonymous_401(pairs_project: Project, charlie: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    assert post_label(client_of(charlie), item.pk, "H").status_code == 404
    anonymous = Client().post(f"/api/pairs/{item.pk}/judgements/", {"label": "H"}, content_type="application/json")
    assert anonymous.status_code == 401
    assert not PairJudgement.objects.exists()


def test_four_agreeing_answers_through_the_api_make_a_consensus(pairs_project: Project) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    for judge in make_judges(pairs_project, 4):
        client = client_of(judge)
        assert next_item(client).json()["id"] == item.pk
        assert post_label(client, item.pk, "N").status_code == 201
    item.refresh_from_db()
    assert (item.state, item.label, item.votes_n, item.taken) == (PairItem.State.CONSENSUS, "N", 4, 4)


# --------------------------------------------------------------------------- undo


def test_undo_gives_the_item_back_and_next_serves_it_again(pairs_project: Project, alice: Any) -> None:
    items = make_pair_items(pairs_project, 2)
    client = client_of(alice)
    next_item(client)
    assert post_label(client, items[0].pk, "H").json()["next"]["id"] == items[1].pk
    undone = client.post("/api/pairs/undo/?project=pairs")
    assert undone.status_code == 200
    body = undone.json()
    assert body["id"] == items[0].pk and body["progress"] == {"answered": 0, "left": 2}
    assert next_item(client).json()["id"] == items[0].pk
    items[0].refresh_from_db()
    assert items[0].votes_h == 0
    assert post_label(client, items[0].pk, "N").status_code == 201


def test_answering_the_item_an_undo_in_another_tab_gave_back_is_409_not_served(
    pairs_project: Project, alice: Any
) -> None:
    """The labeling page's case: one tab shows the next item, another takes the last answer back. The page words its
    notice from ``code`` (static/annotate/pairs/label.js); the detail names the item, for scripts."""
    items = make_pair_items(pairs_project, 2)
    other_tab, this_tab = client_of(alice), client_of(alice)
    next_item(other_tab)
    on_screen = post_label(other_tab, items[0].pk, "H").json()["next"]["id"]
    assert other_tab.post("/api/pairs/undo/?project=pairs").status_code == 200
    refused = post_label(this_tab, on_screen, "N")
    assert refused.status_code == 409
    assert refused.json()["code"] == "not_served"
    assert f"item {on_screen} was not served to you" in refused.json()["detail"]
    assert not PairJudgement.objects.filter(judge=alice, item_id=on_screen).exists()
    assert next_item(this_tab).json()["id"] == items[0].pk  # the item the page then shows


def test_undo_with_nothing_to_undo_is_409(pairs_project: Project, alice: Any) -> None:
    response = client_of(alice).post("/api/pairs/undo/?project=pairs")
    assert response.status_code == 409 and response.json()["code"] == "nothing_to_undo"


def test_undo_refuses_outsiders_and_anonymous(pairs_project: Project, charlie: Any) -> None:
    assert client_of(charlie).post("/api/pairs/undo/?project=pairs").status_code == 404
    assert Client().post("/api/pairs/undo/?project=pairs").status_code == 401


# --------------------------------------------------------------------------- the item list and the blind rule


@pytest.fixture
def judged(pairs_project: Project, alice: Any, bob: Any, clock: Clock) -> list[PairItem]:
    """Three items: alice answered the first H, bob answered the first N and the second H."""
    items = make_pair_items(pairs_project, 3)
    for user, labels in ((alice, ["H"]), (bob, ["N", "H"])):
        for label in labels:
            served = queue.serve_next_item(pairs_project, user)
            clock.advance(12)
            queue.record_judgement(pairs_project, user, served.item_id, label)
    return items


def test_admins_list_every_item_with_state_votes_consensus_and_round(judged: list[PairItem], admin_user: Any) -> None:
    response = client_of(admin_user).get("/api/pairs/?project=pairs")
    assert response.status_code == 200
    rows = {row["id"]: row for row in response.json()["results"]}
    assert set(rows) == {item.pk for item in judged}
    first = rows[judged[0].pk]
    assert first["votes"] == {"H": 1, "N": 1, "unsure": 0}
    assert first["state"] == "open" and first["consensus"] == "" and first["round"] == 1
    assert first["judges_needed"] == 4 and first["selection"] == {"method": "random"}
    assert rows[judged[2].pk]["votes"] == {"H": 0, "N": 0, "unsure": 0}
    only_round_two = client_of(admin_user).get("/api/pairs/?project=pairs&round=2").json()
    assert only_round_two["count"] == 0
    only_open = client_of(admin_user).get("/api/pairs/?project=pairs&state=open").json()
    assert only_open["count"] == 3


def test_annotators_list_only_the_items_they_judged_with_only_their_own_label(judged: list[PairItem], alice: Any,
                                                                             bob: Any) -> None:
    response = client_of(alice).get("/api/pairs/?project=pairs")
    rows = response.json()["results"]
    assert [row["id"] for row in rows] == [judged[0].pk]
    assert rows[0]["your_label"] == "H" and rows[0]["answered_at"]
    for hidden in ("votes", "state", "consensus", "judges_needed", "selection"):
        assert hidden not in rows[0]
    assert '"N"' not in response.content.decode()  # bob's N on the same item shows nowhere
    bobs = client_of(bob).get("/api/pairs/?project=pairs").json()["results"]
    assert {row["id"]: row["your_label"] for row in bobs} == {judged[0].pk: "N", judged[1].pk: "H"}


def test_the_item_list_refuses_outsiders_and_needs_a_project(judged: list[PairItem], charlie: Any, alice: Any
                                                            ) -> None:
    assert client_of(charlie).get("/api/pairs/?project=pairs").status_code == 404
    assert client_of(alice).get("/api/pairs/").json() == {"project": ["This field is required."]}
    assert Client().get("/api/pairs/?project=pairs").status_code == 401


# --------------------------------------------------------------------------- rounds


def test_members_list_the_rounds_and_only_reviewers_see_their_figures(judged: list[PairItem], alice: Any,
                                                                     admin_user: Any, charlie: Any) -> None:
    PairRound.objects.filter(number=1).update(funnel=[{"step": "pool", "count": 3, "explanation": "all"}])
    mine = client_of(alice).get("/api/projects/pairs/pair-rounds/")
    assert mine.status_code == 200
    assert mine.json() == [{
        "number": 1, "status": "open", "size": 3, "created_at": mine.json()[0]["created_at"], "closed_at": None,
        "your_answers": 1,
    }]
    admins = client_of(admin_user).get("/api/projects/pairs/pair-rounds/").json()
    assert admins[0]["items_by_state"] == {"open": 3} and admins[0]["your_answers"] == 0
    assert admins[0]["funnel"][0]["count"] == 3 and admins[0]["detector"] is None
    assert client_of(charlie).get("/api/projects/pairs/pair-rounds/").status_code == 404


def test_the_rounds_list_names_each_rounds_detector_in_a_number_of_queries_that_does_not_grow(
    judged: list[PairItem], admin_user: Any, django_assert_max_num_queries: Any
) -> None:
    from tests.pairs.factories_rounds import sign_head, store_detector

    pair_round = PairRound.objects.get(number=1)
    pair_round.detector = store_detector(pair_round.project, 1, sign_head())
    pair_round.save()
    for number in (2, 3, 4):
        PairRound.objects.create(project=pair_round.project, number=number, size=0, seed=number,
                                 detector=pair_round.detector)
    client = client_of(admin_user)
    with django_assert_max_num_queries(8) as queries:
        rows = client.get("/api/projects/pairs/pair-rounds/").json()
    assert [(row["number"], row["detector"]) for row in rows] == [(1, 1), (2, 1), (3, 1), (4, 1)]
    # The detector's head (a blob) is never read, nor grouped by: that made the list take seconds on SQLite.
    assert not [query["sql"] for query in queries.captured_queries if '"head"' in query["sql"]]


# --------------------------------------------------------------------------- flags


@pytest.fixture
def spammer_flag(pairs_project: Project, clock: Clock) -> JudgeFlag:
    """A judge who answered H on ten items in 2 seconds each: flagged same_label and too_fast."""
    make_pair_items(pairs_project, 10)
    spammer = make_judges(pairs_project, 1, prefix="spammer")[0]
    for _ in range(10):
        served = queue.serve_next_item(pairs_project, spammer)
        clock.advance(2)
        queue.record_judgement(pairs_project, spammer, served.item_id, "H")
    return JudgeFlag.objects.get(judge=spammer, rule="too_fast")


def test_admins_list_flags_with_rule_figures_status_and_judge(spammer_flag: JudgeFlag, admin_user: Any) -> None:
    response = client_of(admin_user).get("/api/projects/pairs/flags/")
    assert response.status_code == 200
    flags = {flag["rule"]: flag for flag in response.json()}
    assert set(flags) == {"same_label", "too_fast"}
    fast = flags["too_fast"]
    assert fast["judge"] == "spammer-00" and fast["status"] == "open" and fast["judge_blocked"] is False
    assert fast["figures"] == {"judgements": 10, "timed": 10, "mean_seconds": 2.0, "limit_seconds": 10.0}
    assert fast["explanation"] == "mean time per item 2.0 s over 10 timed judgements, under the limit of 10.0 s"
    assert flags["same_label"]["figures"] == {"judgements": 10, "label": "H"}
    assert client_of(admin_user).get("/api/projects/pairs/flags/?status=dismissed").json() == []


def test_flags_are_for_admins_only(spammer_flag: JudgeFlag, alice: Any, charlie: Any) -> None:
    assert client_of(alice).get("/api/projects/pairs/flags/").status_code == 403
    assert client_of(charlie).get("/api/projects/pairs/flags/").status_code == 404
    assert client_of(alice).post(f"/api/projects/pairs/flags/{spammer_flag.pk}/block/").status_code == 403
    assert client_of(alice).post(f"/api/projects/pairs/flags/{spammer_flag.pk}/dismiss/").status_code == 403
    assert client_of(charlie).post(f"/api/projects/pairs/flags/{spammer_flag.pk}/dismiss/").status_code == 404
    assert Client().get("/api/projects/pairs/flags/").status_code == 401
    assert JudgeFlag.objects.get(pk=spammer_flag.pk).status == "open"


def test_blocking_from_a_flag_requeues_the_items_and_refuses_the_judge(spammer_flag: JudgeFlag, admin_user: Any,
                                                                      pairs_project: Project) -> None:
    response = client_of(admin_user).post(
        f"/api/projects/pairs/flags/{spammer_flag.pk}/block/", {"reason": "H on everything in 2 s"},
        content_type="application/json",
    )
    assert response.status_code == 200
    body = response.json()
    assert body["flag"]["status"] == "blocked" and body["flag"]["judge_blocked"] is True
    assert body["flag"]["reviewed_by"] == "adam"
    assert body["items_recomputed"] == 10
    assert body["items_reopened"] == 0  # one vote each: the items were open and stay open, with no answers now
    assert set(PairItem.objects.values_list("votes_h", "taken")) == {(0, 0)}
    assert BlockedJudge.objects.get(judge=spammer_flag.judge).reason == "H on everything in 2 s"
    refused = next_item(client_of(spammer_flag.judge))
    assert refused.status_code == 403
    assert JudgeFlag.objects.get(judge=spammer_flag.judge, rule="same_label").status == "blocked"


def test_dismissing_a_flag_and_not_once_the_judge_is_blocked(spammer_flag: JudgeFlag, admin_user: Any) -> None:
    client = client_of(admin_user)
    dismissed = client.post(f"/api/projects/pairs/flags/{spammer_flag.pk}/dismiss/")
    assert dismissed.status_code == 200
    assert dismissed.json()["status"] == "dismissed" and dismissed.json()["reviewed_by"] == "adam"
    client.post(f"/api/projects/pairs/flags/{spammer_flag.pk}/block/", {"reason": "H on everything in 2 s"},
                content_type="application/json")
    refused = client.post(f"/api/projects/pairs/flags/{spammer_flag.pk}/dismiss/")
    assert refused.status_code == 409 and "blocked" in refused.json()["detail"]


def test_unknown_flags_are_404(spammer_flag: JudgeFlag, admin_user: Any) -> None:
    client = client_of(admin_user)
    assert client.post("/api/projects/pairs/flags/999999/dismiss/").status_code == 404
    assert client.post("/api/projects/pairs/flags/99999999999999999999/block/").status_code == 404


# --------------------------------------------------------------------------- the schema


def test_the_schema_describes_the_pairs_endpoints(client: Any, admin_user: Any) -> None:
    client.force_login(admin_user)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = document["paths"]

    def statuses(path: str, method: str) -> set[str]:
        return set(paths[path][method]["responses"])

    assert statuses("/api/pairs/next/", "get") == {"200", "204", "400", "401", "403", "404"}
    assert statuses("/api/pairs/{id}/judgements/", "post") == {"200", "201", "400", "401", "403", "404", "409"}
    assert statuses("/api/pairs/undo/", "post") == {"200", "400", "401", "403", "404", "409"}
    assert statuses("/api/pairs/", "get") == {"200", "400", "401", "404"}
    assert statuses("/api/projects/{slug}/pair-rounds/", "get") == {"200", "400", "401", "404"}  # 400: a span project, to its members
    assert statuses("/api/projects/{slug}/flags/", "get") == {"200", "400", "401", "403", "404"}
    assert statuses("/api/projects/{slug}/flags/{id}/block/", "post") == {"200", "400", "401", "403", "404"}
    # 400: dismissing takes no fields, and names any sent.
    assert statuses("/api/projects/{slug}/flags/{id}/dismiss/", "post") == {"200", "400", "401", "403", "404", "409"}
    schemas = document["components"]["schemas"]
    result = schemas["PairJudgementResult"]["properties"]
    assert result["next"]["allOf"] == [{"$ref": "#/components/schemas/PairToJudge"}] and result["next"]["nullable"]
    assert set(schemas["PairToJudge"]["required"]) >= {
        "id", "original", "perturbed", "original_span", "perturbed_span", "other_spans", "original_words",
        "perturbed_words", "progress",
    }
    assert schemas["PairJudgementRequest"]["properties"]["label"]["allOf"] == [{"$ref": "#/components/schemas/LabelEnum"}]
    assert sorted(schemas["LabelEnum"]["enum"]) == ["?", "H", "N"]


def test_responses_are_json_with_the_documented_keys(pairs_project: Project, alice: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    client = client_of(alice)
    body = next_item(client).json()
    assert set(body) == {"id", "original", "perturbed", "original_span", "perturbed_span", "other_spans",
                         "original_words", "perturbed_words", "served_at", "progress"}
    answered = json.loads(post_label(client, item.pk, "H").content)
    assert set(answered) == {"item", "label", "seconds", "answered_at", "next", "progress"}
