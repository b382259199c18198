"""A retried answer (POST /api/pairs/<id>/judgements/): the page's http.js resends a write whose answer a dropped
connection lost. The same label on an answer that stands is 200 with that answer, recording nothing; another label
is still 409, which says that undo is the way to change an answer."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from annotate.models import JudgeFlag, PairItem, PairJudgement, Project
from annotate.services.pairs import queue
from tests.pairs.conftest import Clock, make_pair_items

pytestmark = pytest.mark.django_db


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def post_label(client: Client, item_id: int, label: str) -> Any:
    return client.post(f"/api/pairs/{item_id}/judgements/", {"label": label}, content_type="application/json")


def stored(item: PairItem) -> dict[str, Any]:
    """The rows an answer writes: every judgement of the item and its counters and outcome."""
    item.refresh_from_db()
    judgements = list(PairJudgement.objects.filter(item=item).order_by("id").values(
        "id", "judge_id", "label", "served_at", "answered_at", "seconds", "counted"
    ))
    return {
        "judgements": judgements,
        "item": (item.votes_h, item.votes_n, item.votes_unsure, item.state, item.label, item.taken,
                 item.judges_needed),
    }


def test_the_same_label_again_is_200_with_the_recorded_answer_and_records_nothing(
    pairs_project: Project, alice: Any, clock: Clock
) -> None:
    items = make_pair_items(pairs_project, 3)
    client = client_of(alice)
    assert client.get("/api/pairs/next/?project=pairs").json()["id"] == items[0].pk
    clock.advance(14)
    first = post_label(client, items[0].pk, "H")
    assert first.status_code == 201
    before = stored(items[0])
    judgements_before = PairJudgement.objects.count()

    clock.advance(30)  # the retry arrives later: the answer's time must not move
    retried = post_label(client, items[0].pk, "H")

    assert retried.status_code == 200, retried.json()
    body, original = retried.json(), first.json()
    assert set(body) == set(original)
    assert (body["item"], body["label"], body["seconds"], body["answered_at"]) == (
        original["item"], "H", 14.0, original["answered_at"]
    )
    # The next item is the one the first answer served, still theirs; the progress counts the answer once.
    assert body["next"]["id"] == original["next"]["id"] == items[1].pk
    assert body["progress"] == original["progress"] == {"answered": 1, "left": 2}
    assert stored(items[0]) == before
    assert PairJudgement.objects.count() == judgements_before  # no serve of another item either


def test_a_retry_after_later_answers_returns_the_judges_current_next_item(
    pairs_project: Project, alice: Any, clock: Clock
) -> None:
    items = make_pair_items(pairs_project, 3)
    client = client_of(alice)
    client.get("/api/pairs/next/?project=pairs")
    clock.advance(9)
    assert post_label(client, items[0].pk, "N").status_code == 201
    clock.advance(9)
    assert post_label(client, items[1].pk, "H").status_code == 201

    late = post_label(client, items[0].pk, "N")

    assert late.status_code == 200
    body = late.json()
    assert (body["item"], body["label"], body["seconds"]) == (items[0].pk, "N", 9.0)
    assert body["next"]["id"] == items[2].pk and body["progress"] == {"answered": 2, "left": 1}
    assert list(PairJudgement.objects.filter(judge=alice, answered_at__isnull=False).values_list(
        "item_id", "label")) == [(items[0].pk, "N"), (items[1].pk, "H")]


def test_the_last_answer_retried_carries_next_null(pairs_project: Project, alice: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    client = client_of(alice)
    client.get("/api/pairs/next/?project=pairs")
    assert post_label(client, item.pk, "?").status_code == 201
    retried = post_label(client, item.pk, "?")
    assert retried.status_code == 200
    assert retried.json()["next"] is None and retried.json()["progress"] == {"answered": 1, "left": 0}


def test_another_label_is_still_409_saying_undo_changes_an_answer(
    pairs_project: Project, alice: Any, clock: Clock
) -> None:
    item = make_pair_items(pairs_project, 2)[0]
    client = client_of(alice)
    client.get("/api/pairs/next/?project=pairs")
    assert post_label(client, item.pk, "H").status_code == 201
    before = stored(item)

    refused = post_label(client, item.pk, "N")

    assert refused.status_code == 409
    body = refused.json()
    assert body["code"] == "already_judged"
    assert body["detail"] == (
        f"you already judged item {item.pk} as H, and an item is judged once per judge: to change your answer, "
        "undo it while it is your last one (u on the labeling page, POST /api/pairs/undo/?project=pairs) and "
        "answer again"
    )
    assert stored(item) == before


def test_after_an_undo_the_same_label_is_a_new_answer_not_a_retry(
    pairs_project: Project, alice: Any, clock: Clock
) -> None:
    item = make_pair_items(pairs_project, 2)[0]
    client = client_of(alice)
    client.get("/api/pairs/next/?project=pairs")
    clock.advance(5)
    assert post_label(client, item.pk, "H").status_code == 201
    assert client.post("/api/pairs/undo/?project=pairs").json()["id"] == item.pk
    clock.advance(20)

    again = post_label(client, item.pk, "H")

    assert again.status_code == 201  # the answer was taken back: this one is recorded, timed from the undo
    assert again.json()["seconds"] == 20.0
    assert PairJudgement.objects.get(item=item, judge=alice).seconds == 20.0


def test_a_retry_does_not_run_the_spam_rules_again(pairs_project: Project, alice: Any, clock: Clock,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules ran when the answer was recorded; a retry adds no answer, so it must not add a flag."""
    config = pairs_project.pair_config
    config.min_judgements = 1
    config.save()
    item = make_pair_items(pairs_project, 2)[0]
    client = client_of(alice)
    client.get("/api/pairs/next/?project=pairs")
    assert post_label(client, item.pk, "H").status_code == 201  # answered at once: too fast, all H
    flags = list(JudgeFlag.objects.filter(judge=alice).values_list("rule", "figures", "updated_at"))
    assert flags, "the first answer trips a rule"
    checks: list[Any] = []
    from annotate.services.pairs import flags as spam_rules

    real_check = spam_rules.check_judge
    monkeypatch.setattr(spam_rules, "check_judge", lambda *args, **kwargs: checks.append(args) or real_check(
        *args, **kwargs))
    assert post_label(client, item.pk, "H").status_code == 200
    assert checks == []  # the rules did not run (running them again would leave the flags as they are, unseen)
    assert list(JudgeFlag.objects.filter(judge=alice).values_list("rule", "figures", "updated_at")) == flags


def test_the_service_marks_a_retry_as_not_recorded(pairs_project: Project, alice: Any, clock: Clock) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    queue.serve_next_item(pairs_project, alice)
    clock.advance(3)
    first = queue.record_and_serve_next(pairs_project, alice, item.pk, "N")
    clock.advance(60)
    again = queue.record_and_serve_next(pairs_project, alice, item.pk, "N")
    assert first.recorded and not again.recorded
    assert (again.judgement.pk, again.judgement.seconds, again.judgement.answered_at) == (
        first.judgement.pk, 3.0, first.judgement.answered_at
    )
    with pytest.raises(queue.AlreadyJudged):
        queue.record_and_serve_next(pairs_project, alice, item.pk, "H")


def test_the_schema_describes_the_retry(client: Client, admin_user: Any) -> None:
    client.force_login(admin_user)
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    responses = paths["/api/pairs/{id}/judgements/"]["post"]["responses"]
    retry = responses["200"]
    assert retry["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/PairJudgementResult"}
    assert "retry" in retry["description"].lower() and "Nothing new was recorded" in retry["description"]
    assert "undo" in responses["409"]["description"]


def test_an_answer_whose_time_is_not_known_says_null_as_the_schema_allows(pairs_project: Project, alice: Any,
                                                                          clock: Clock) -> None:
    """The server clock went back between serve and answer: the 201 (and its retry) says seconds null, and the
    schema says the field may be null, so a client generated from it reads the answer it got."""
    item = make_pair_items(pairs_project, 1)[0]
    client = client_of(alice)
    client.get("/api/pairs/next/?project=pairs")
    clock.advance(-30)
    first = post_label(client, item.pk, "N")
    assert first.status_code == 201 and first.json()["seconds"] is None
    again = post_label(client, item.pk, "N")
    assert again.status_code == 200 and again.json()["seconds"] is None
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert schema["components"]["schemas"]["PairJudgementResult"]["properties"]["seconds"]["nullable"] is True
    assert schema["components"]["schemas"]["AuditResult"]["properties"]["seconds"]["nullable"] is True
