"""Every 400 of the API has one shape, DRF's: an object of field (or non_field_errors) -> [messages].

Clients read a refusal the same way on every endpoint. Several endpoints used to
answer a plain string (``{"batch": "must be a batch id"}``), DRF's own
``{"detail": "JSON parse error ..."}`` for a body that is not JSON, or a nested
object for a bad list item (``{"span_ids": {"0": [...]}}``). Each case is sent as a
script sends it (DRF's API client with a token), and the body is checked three
ways: the shape, the message, and the 400 that /api/schema/ documents for that
operation.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from rest_framework.test import APIClient

from annotate.models import (
    Batch,
    GoldLabel,
    Membership,
    PairConfig,
    Project,
    Sample,
    SampleFlag,
    SampleReview,
    SpanAnnotation,
)
from annotate.services import spans, tokens
from annotate.services.flags import MAX_COMMENT
from judging.models import AuditItem, Judge, JudgeRun
from tests.pairs.conftest import make_pair_items

pytestmark = pytest.mark.django_db

NOT_JSON = "{round: 1"
PARSE_ERROR = "JSON parse error - "  # then the parser's own words


@dataclass(frozen=True)
class Case:
    """One bad request: who sends it, where, with what, and the one field and message it must get back."""

    user: str  # "annotator" or "admin"
    method: str
    # {sample} is filled in with the project's first sample, {pair_item} and {audit_item} with an item the caller
    # may write to (access is checked before the body is read)
    path: str
    body: Any = None  # a dict is sent as JSON; a str as a raw (not JSON) application/json body
    field: str = ""
    message: str | Callable[[Sample], str] = ""
    starts_with: bool = False  # for messages whose end is the JSON parser's wording


CASES = {
    "sample list, a batch that is no id": Case(
        "admin", "get", "/api/samples/?batch=x", field="batch", message="'x' is not a batch id"
    ),
    "flag, a round that is no number (GET)": Case(
        "annotator", "get", "/api/samples/{sample}/flag/?round=x", field="round",
        message="'x' is not a round number (1, 2, ...)",
    ),
    "flag, a round that is no number (DELETE)": Case(
        "annotator", "delete", "/api/samples/{sample}/flag/?round=0", field="round",
        message="'0' is not a round number (1, 2, ...)",
    ),
    "flag, a comment too long": Case(
        "annotator", "post", "/api/samples/{sample}/flag/", {"kind": "broken", "comment": "x" * (MAX_COMMENT + 1)},
        field="comment", message=f"is {MAX_COMMENT + 1} characters long; at most {MAX_COMMENT}",
    ),
    "flag, a body that is not JSON": Case(
        "annotator", "post", "/api/samples/{sample}/flag/", NOT_JSON, field="non_field_errors",
        message=PARSE_ERROR, starts_with=True,
    ),
    "similarity, a selection outside the text": Case(
        "annotator", "post", "/api/samples/{sample}/similarity/", {"side": "summary", "start": 0, "end": 99999},
        field="start",
        message=lambda sample: f"selection 0..99999 is outside the summary text of {len(sample.summary)} characters",
    ),
    "gold, a span that is not the sample's": Case(
        "admin", "put", "/api/samples/{sample}/gold/", {"span_ids": [999999]}, field="span_ids",
        message="spans: [999999] are not round-1 spans of this sample",
    ),
    "gold, a span id that is no number": Case(
        "admin", "put", "/api/samples/{sample}/gold/", {"span_ids": ["x"]}, field="span_ids",
        message="span_ids[0]: A valid integer is required.",
    ),
    "review, a round not assigned": Case(
        "annotator", "post", "/api/samples/{sample}/review/", {"round": 5, "done": True}, field="round",
        message="you are not assigned to round 5 of batch 'batch-1'",
    ),
    "review, a body that is not JSON": Case(
        "annotator", "post", "/api/samples/{sample}/review/", NOT_JSON, field="non_field_errors",
        message=PARSE_ERROR, starts_with=True,
    ),
    "span, a label that is null": Case(
        "annotator", "post", "/api/spans/", {"sample": "{sample}", "start": 0, "end": 3, "labels": [None]},
        field="labels", message="labels[0]: This field may not be null.",
    ),
    "export, a round the project lacks": Case(
        "admin", "get", "/api/projects/demo/export/?format=jsonl&round=9", field="round",
        message="project 'demo' has no round 9 (its rounds: 1)",
    ),
    "agreement, a round the project lacks": Case(
        "admin", "get", "/api/projects/demo/agreement/?scheme=C|U&round=9", field="round",
        message="project 'demo' has no round 9 (rounds with assignments: 1)",
    ),
    "pair judgement, a body that is not JSON": Case(
        "annotator", "post", "/api/pairs/{pair_item}/judgements/", NOT_JSON, field="non_field_errors",
        message=PARSE_ERROR, starts_with=True,
    ),
    "judge run, a judge the project lacks": Case(
        "admin", "post", "/api/projects/demo/judge-runs/", {"judge": 999999}, field="judge",
        message="no judge 999999 in project 'demo'",
    ),
    "judge run, a batch without scope batch": Case(
        "admin", "post", "/api/projects/demo/judge-runs/", {"judge": "{judge}", "batch": "{batch}"}, field="batch",
        message="a batch is given only with scope batch, not all",
    ),
    "judges, a body that is not JSON": Case(
        "admin", "post", "/api/projects/demo/judges/", NOT_JSON, field="non_field_errors",
        message=PARSE_ERROR, starts_with=True,
    ),
    "audit verdict, a body that is not JSON": Case(
        "admin", "post", "/api/audit-items/{audit_item}/audits/", NOT_JSON, field="non_field_errors",
        message=PARSE_ERROR, starts_with=True,
    ),
}


@pytest.fixture
def clients(batch: Batch, alice: Any, admin_user: Any) -> dict[str, APIClient]:
    """Token clients, as scripts call the API: no session, no CSRF token."""
    made = {}
    for role, user in (("annotator", alice), ("admin", admin_user)):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {tokens.create_api_token(user, 'error shape')[1]}")
        made[role] = client
    return made


@pytest.fixture
def schema(admin_user: Any) -> dict[str, Any]:
    client = APIClient()
    client.force_authenticate(admin_user)
    return json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)


def filled(value: Any, names: dict[str, int]) -> Any:
    """The case's body with {sample}, {judge} and {batch} replaced by the real ids."""
    if isinstance(value, dict):
        return {key: filled(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [filled(item, names) for item in value]
    if isinstance(value, str) and value.startswith("{") and value.endswith("}") and value[1:-1] in names:
        return names[value[1:-1]]
    return value


def send(client: APIClient, case: Case, sample: Sample, names: dict[str, int]) -> Any:
    path = case.path.format(**names)
    if case.body is None:
        return getattr(client, case.method)(path)
    body = case.body if isinstance(case.body, str) else json.dumps(filled(case.body, names))
    return getattr(client, case.method)(path, body, content_type="application/json")


def documented_400(schema: dict[str, Any], path: str, method: str) -> dict[str, Any]:
    """The 400 body schema /api/schema/ gives this operation, its component references resolved."""
    template = next(
        name for name in schema["paths"]
        if len(name.split("/")) == len(path.split("/"))
        and all(a == b or a.startswith("{") for a, b in zip(name.split("/"), path.split("/"), strict=True))
    )
    body = schema["paths"][template][method]["responses"]["400"]["content"]["application/json"]["schema"]
    return {**body, "components": schema["components"]}


def stored_rows() -> list[int]:
    return [model.objects.count() for model in (SpanAnnotation, GoldLabel, SampleFlag, SampleReview, JudgeRun)]


@pytest.mark.parametrize("name", list(CASES))
def test_every_400_names_the_field_with_a_list_of_messages(
    name: str, batch: Batch, alice: Any, clients: dict[str, APIClient], schema: dict[str, Any]
) -> None:
    case = CASES[name]
    sample = batch.samples.order_by("position").first()
    spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    judge = Judge.objects.create(project=batch.project, name="local", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="tiny")
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=pairs)
    Membership.objects.create(project=pairs, user=alice, role=Membership.Role.ANNOTATOR)
    pair_item = make_pair_items(pairs, 1)[0]
    audit_item = AuditItem.objects.create(project=batch.project, sample=sample, reason="flagged")
    before = stored_rows()

    names = {"sample": sample.pk, "judge": judge.pk, "batch": batch.pk, "pair_item": pair_item.pk,
             "audit_item": audit_item.pk}
    response = send(clients[case.user], case, sample, names)

    assert response.status_code == 400, response.content
    body = response.json()
    assert list(body) == [case.field], body
    messages = body[case.field]
    assert isinstance(messages, list) and len(messages) == 1, body
    expected = case.message(sample) if callable(case.message) else case.message
    if case.starts_with:
        assert messages[0].startswith(expected) and len(messages[0]) > len(expected), messages
    else:
        assert messages == [expected]
    path = response.request["PATH_INFO"]
    jsonschema.validate(body, documented_400(schema, path, case.method))
    assert stored_rows() == before  # nothing was saved


def test_a_400_in_another_shape_is_refused_by_the_schema(schema: dict[str, Any]) -> None:
    """The documented 400 is strict enough to catch the old shapes, so the check above can fail."""
    documented = documented_400(schema, "/api/samples/", "get")
    for old in ({"batch": "must be a batch id"}, {"detail": "JSON parse error"}, {"span_ids": {"0": ["x"]}}, {}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(old, documented)
