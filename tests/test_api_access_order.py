"""Every API write looks the object and the caller's access up before it reads the body.

A caller who may not write gets the refusal the API gives them for the object (an outsider 404, the project's
existence hidden; a member whose role may not do this 403) whatever the body holds: a 400 naming a missing field
would tell an outsider that the object exists and what the endpoint expects. Nothing is written either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import models
from django.test import Client

from annotate.models import (
    Batch,
    BlockedJudge,
    GoldLabel,
    JudgeFlag,
    Membership,
    PairJudgement,
    Project,
    Sample,
    SampleFlag,
    SampleReview,
    SpanAnnotation,
)
from annotate.services.pairs import queue
from judging.models import Audit, AuditItem, Judge, JudgeRun
from tests.conftest import make_user
from tests.pairs import conftest as pair_fixtures
from tests.pairs.conftest import make_pair_items

JSON = "application/json"


def client_of(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def row_counts(*kinds: type[models.Model]) -> dict[str, int]:
    return {kind.__name__: kind.objects.count() for kind in kinds}


def member(project: Project, username: str, role: str) -> Any:
    user = make_user(username)
    Membership.objects.create(project=project, user=user, role=role)
    return user


# --------------------------------------------------------------------------- answering a pair item


# tests/pairs/conftest.py's pairs project "pairs" (adam admin, alice and bob annotators); that conftest covers
# tests/pairs only, so its fixture is named here.
pairs_project = pair_fixtures.pairs_project


@pytest.fixture
def served_item(pairs_project: Project, alice: Any) -> int:
    """An item of an open round, served to alice: it exists and is being judged."""
    make_pair_items(pairs_project, 2)
    served = queue.serve_next_item(pairs_project, alice)
    assert served is not None
    return served.item_id


def answer(client: Client, item_id: int, body: dict[str, Any]) -> Any:
    return client.post(f"/api/pairs/{item_id}/judgements/", json.dumps(body), content_type=JSON)


@pytest.mark.parametrize("body", [{}, {"label": "maybe"}, {"label": "H", "note": "stray field"}])
def test_an_outsiders_bad_answer_gets_the_same_404_as_a_valid_one(
    served_item: int, charlie: Any, body: dict[str, Any]
) -> None:
    client = client_of(charlie)
    before = row_counts(PairJudgement)
    valid = answer(client, served_item, {"label": "H"})
    refused = answer(client, served_item, body)
    assert valid.status_code == 404
    assert refused.status_code == valid.status_code, refused.json()
    assert refused.json() == valid.json()  # the same words: nothing tells the item exists
    assert row_counts(PairJudgement) == before


@pytest.mark.parametrize("role", [Membership.Role.AUDITOR, Membership.Role.CURATOR])
def test_a_member_who_does_not_judge_gets_403_for_an_empty_answer_as_for_a_valid_one(
    pairs_project: Project, served_item: int, role: str
) -> None:
    client = client_of(member(pairs_project, "grace", role))
    before = row_counts(PairJudgement)
    valid = answer(client, served_item, {"label": "N"})
    refused = answer(client, served_item, {})
    assert valid.status_code == refused.status_code == 403
    assert refused.json()["code"] == valid.json()["code"] == "not_a_judge"
    assert row_counts(PairJudgement) == before


def test_a_judge_still_gets_400_naming_the_missing_label(served_item: int, alice: Any) -> None:
    response = answer(client_of(alice), served_item, {})
    assert response.status_code == 400
    assert "label" in response.json()
    assert not PairJudgement.objects.filter(item_id=served_item, answered_at__isnull=False).exists()


def undo(client: Client, body: dict[str, Any]) -> Any:
    return client.post("/api/pairs/undo/?project=pairs", json.dumps(body), content_type=JSON)


def test_an_outsiders_undo_with_a_stray_field_gets_the_same_404_as_without(
    pairs_project: Project, served_item: int, alice: Any, charlie: Any
) -> None:
    answer(client_of(alice), served_item, {"label": "H"})
    before = row_counts(PairJudgement)
    answered = set(PairJudgement.objects.filter(answered_at__isnull=False).values_list("pk", flat=True))
    client = client_of(charlie)
    valid = undo(client, {})  # undo takes no fields: the empty body is the valid one
    refused = undo(client, {"item": served_item})
    assert valid.status_code == refused.status_code == 404
    assert row_counts(PairJudgement) == before
    assert set(PairJudgement.objects.filter(answered_at__isnull=False).values_list("pk", flat=True)) == answered


def test_an_auditors_undo_with_a_stray_field_gets_the_same_403_as_without(pairs_project: Project) -> None:
    client = client_of(member(pairs_project, "grace", Membership.Role.AUDITOR))
    valid = undo(client, {})
    refused = undo(client, {"item": 1})
    assert valid.status_code == refused.status_code == 403
    assert refused.json()["code"] == "not_a_judge"


def test_a_judges_undo_with_a_stray_field_is_still_400_naming_it(pairs_project: Project, alice: Any) -> None:
    response = undo(client_of(alice), {"item": 1})
    assert response.status_code == 400
    assert "item" in response.json()


# --------------------------------------------------------------------------- an audit verdict


@pytest.fixture
def audit_item(project: Project, batch: Batch) -> AuditItem:
    return AuditItem.objects.create(project=project, sample=batch.samples.order_by("position").first(),
                                    reason="flagged for the test")


def verdict(client: Client, item: AuditItem, body: dict[str, Any]) -> Any:
    return client.post(f"/api/audit-items/{item.pk}/audits/", json.dumps(body), content_type=JSON)


@pytest.mark.parametrize("body", [{"score": 9}, {"score": "bad"}, {"score": 3, "stray": True}])
def test_an_outsiders_malformed_verdict_gets_the_same_404_as_a_valid_one(
    audit_item: AuditItem, charlie: Any, body: dict[str, Any]
) -> None:
    client = client_of(charlie)
    assert client.get("/api/projects/demo/audit/next/").status_code == 404  # what outsiders get for a read
    before = row_counts(Audit)
    valid = verdict(client, audit_item, {"score": 3})
    refused = verdict(client, audit_item, body)
    assert valid.status_code == 404
    assert refused.status_code == valid.status_code, refused.json()
    assert row_counts(Audit) == before


def test_an_annotators_malformed_verdict_gets_the_same_403_as_a_valid_one(audit_item: AuditItem, alice: Any) -> None:
    client = client_of(alice)
    before = row_counts(Audit)
    valid = verdict(client, audit_item, {"score": 3})
    refused = verdict(client, audit_item, {"score": 9})
    assert valid.status_code == refused.status_code == 403
    assert row_counts(Audit) == before


def test_an_auditors_malformed_verdict_is_still_400_naming_the_field(audit_item: AuditItem) -> None:
    auditor = member(audit_item.project, "grace", Membership.Role.AUDITOR)
    response = verdict(client_of(auditor), audit_item, {"score": 9})
    assert response.status_code == 400
    assert "score" in response.json()


# --------------------------------------------------------------------------- flagging a sample


def flag_write(client: Client, method: str, sample: Sample, body: dict[str, Any]) -> Any:
    send: Callable[..., Any] = getattr(client, method)
    return send(f"/api/samples/{sample.pk}/flag/", json.dumps(body), content_type=JSON)


@pytest.mark.parametrize("body", [{}, {"kind": "odd"}, {"kind": "broken", "stray": "field"}, {"round": "x"}])
@pytest.mark.parametrize("role", [Membership.Role.ADMIN, Membership.Role.AUDITOR, Membership.Role.CURATOR])
def test_a_member_who_does_not_annotate_the_batch_gets_403_for_a_bad_flag_as_for_a_valid_one(
    sample: Sample, role: str, body: dict[str, Any]
) -> None:
    client = client_of(member(sample.project, "grace", role))
    before = row_counts(SampleFlag)
    valid = flag_write(client, "post", sample, {"kind": "broken", "comment": "cut off"})
    refused = flag_write(client, "post", sample, body)
    assert valid.status_code == 403
    assert refused.status_code == valid.status_code, refused.json()
    assert "only the annotators of batch" in refused.json()["detail"]
    assert row_counts(SampleFlag) == before


@pytest.mark.parametrize("body", [{}, {"kind": "odd"}, {"stray": "field"}])
def test_an_outsiders_bad_flag_gets_the_same_404_as_a_valid_one(sample: Sample, charlie: Any,
                                                                 body: dict[str, Any]) -> None:
    client = client_of(charlie)
    valid = flag_write(client, "post", sample, {"kind": "broken"})
    refused = flag_write(client, "post", sample, body)
    assert valid.status_code == refused.status_code == 404
    assert refused.json() == valid.json()
    assert row_counts(SampleFlag) == {"SampleFlag": 0}


def test_withdrawing_a_flag_asks_who_may_flag_before_reading_the_body(sample: Sample, admin_user: Any) -> None:
    refused = flag_write(client_of(admin_user), "delete", sample, {"stray": "field"})
    assert refused.status_code == 403, refused.json()


def test_the_batchs_annotator_still_gets_400_naming_the_bad_flag_field(sample: Sample, alice: Any) -> None:
    response = flag_write(client_of(alice), "post", sample, {"kind": "odd"})
    assert response.status_code == 400
    assert "kind" in response.json()
    assert not SampleFlag.objects.exists()


# --------------------------------------------------------------------------- every other write with an object


WRITTEN = (SpanAnnotation, SampleFlag, SampleReview, GoldLabel, Judge, JudgeRun, JudgeFlag, BlockedJudge)


@pytest.fixture
def judge_flag(pairs_project: Project, alice: Any) -> JudgeFlag:
    return JudgeFlag.objects.create(project=pairs_project, judge=alice, rule=JudgeFlag.Rule.SAME_LABEL)


def _writes(sample: Sample, span: SpanAnnotation, flag: JudgeFlag) -> dict[str, tuple[str, str]]:
    """Each write endpoint whose URL names an object: (method, address)."""
    return {
        "sample similarity": ("post", f"/api/samples/{sample.pk}/similarity/"),
        "sample review": ("post", f"/api/samples/{sample.pk}/review/"),
        "sample flag": ("post", f"/api/samples/{sample.pk}/flag/"),
        "sample gold": ("put", f"/api/samples/{sample.pk}/gold/"),
        "batch submit": ("post", f"/api/batches/{sample.batch_id}/submit/"),
        "span change": ("patch", f"/api/spans/{span.pk}/"),
        "judge create": ("post", "/api/projects/demo/judges/"),
        "judge run start": ("post", "/api/projects/demo/judge-runs/"),
        "judgement import": ("post", "/api/projects/demo/judgements/import/"),
        "flag block": ("post", f"/api/projects/pairs/flags/{flag.pk}/block/"),
        "flag unblock": ("post", f"/api/projects/pairs/flags/{flag.pk}/unblock/"),
        "flag dismiss": ("post", f"/api/projects/pairs/flags/{flag.pk}/dismiss/"),
    }


@pytest.mark.parametrize("body", [{}, {"stray": "field"}])
@pytest.mark.parametrize("name", [
    "sample similarity", "sample review", "sample flag", "sample gold", "batch submit", "span change",
    "judge create", "judge run start", "judgement import", "flag block", "flag unblock", "flag dismiss",
])
def test_an_outsiders_empty_or_stray_write_gets_404_and_writes_nothing(
    sample: Sample, alice: Any, charlie: Any, judge_flag: JudgeFlag, name: str, body: dict[str, Any]
) -> None:
    span = SpanAnnotation.objects.create(sample=sample, annotator=alice, round=1, start=0, end=4,
                                         text=sample.summary[:4], labels=["U"])
    method, address = _writes(sample, span, judge_flag)[name]
    client = client_of(charlie)
    before = row_counts(*WRITTEN)
    send: Callable[..., Any] = getattr(client, method)
    response = send(address, json.dumps(body), content_type=JSON)
    assert response.status_code == 404, (name, response.status_code, response.content[:200])
    assert row_counts(*WRITTEN) == before
