"""The API schema tells the truth: schemathesis calls every operation it lists, as an annotator and as an admin.

The schema is loaded from the running app (/api/schema/ through WSGI, in this
process and this test's database transaction). For each operation, Hypothesis
draws requests from the schema (derandomized: the same requests every run);
most are pointed at the project's real samples, spans and slugs so they reach
the code behind the lookups. Each request is sent with an annotator's token and
with an admin's, and fails the test on a 5xx or on a response the schema does
not describe: its status code, content type or body.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from annotate.models import Batch, Membership, PairConfig, Project, SpanAnnotation
from annotate.services import rounds, spans, tokens
from annotate.services.pairs import queue

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
CONFIG = SchemathesisConfig.from_dict({
    "seed": 20261123,
    "generation": {"mode": "positive", "deterministic": True},
    # Examples and fuzzing only: the coverage phase's hundreds of boundary cases per operation cost minutes.
    "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
})


@dataclass
class ProjectData:
    """What the requests are pointed at, and whose tokens send them."""

    slug: str
    batch_ids: list[int]
    sample_ids: list[int]
    span_ids: list[int]
    tokens: dict[str, str] = field(default_factory=dict)
    # A pairs project beside it (the same admin and annotator): its items and a spammer flag.
    pair_slug: str = ""
    pair_item_ids: list[int] = field(default_factory=list)
    flag_ids: list[int] = field(default_factory=list)


@pytest.fixture
def wsgi_app() -> Iterator[WSGIHandler]:
    """Django's WSGI handler, kept on this test's database connection.

    Closing "old" connections at the end of each request would drop the test's
    transaction; Django's own test client leaves them open in the same way.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield WSGIHandler()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(wsgi_app: WSGIHandler, admin_user: Any) -> Any:
    # The schema, like every endpoint, is for signed-in callers.
    key = tokens.create_api_token(admin_user, "schema reader")[1]
    return schemathesis.openapi.from_wsgi("/api/schema/", wsgi_app, config=CONFIG,
                                          headers={"Authorization": f"Token {key}"})


def test_the_schema_and_its_docs_are_for_signed_in_callers(client: Any, admin_user: Any) -> None:
    assert client.get("/api/schema/").status_code == 401
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/accounts/login/")
    client.force_login(admin_user)
    assert client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]
    assert client.get("/api/docs/").status_code == 200


@pytest.fixture
def project_data(embedded: Batch, admin_user: Any, alice: Any, bob: Any) -> ProjectData:
    """The conftest project, embedded, with round 1 done by both annotators, round 2 open and a gold label."""
    samples = list(embedded.samples.order_by("position"))
    first, second = samples[0], samples[1]
    spans.create_span(first, alice, round=1, start=0, end=8, labels=["Unwanted.Extrinsic"], note="not in the source")
    spans.create_span(first, bob, round=1, start=10, end=24, labels=["Questionable"])
    spans.create_span(second, alice, round=1, start=0, end=5, labels=["Benign"], source_start=0, source_end=3)
    for sample in samples:
        for annotator in (alice, bob):
            spans.mark_sample_done(sample, annotator, round=1, done=True)
    rounds.open_reconciliation_round(embedded, reveal_names=False)
    gold_span = SpanAnnotation.objects.filter(sample=first, annotator=alice, round=1).first()
    rounds.adjudicate_sample(first, admin_user, span_ids=[gold_span.pk], round=1)
    pairs = _pairs_project(admin_user, alice, bob)
    return ProjectData(
        pair_slug=pairs.slug,
        pair_item_ids=list(pairs.pair_items.values_list("id", flat=True)),
        flag_ids=list(pairs.judge_flags.values_list("id", flat=True)),
        slug=embedded.project.slug,
        batch_ids=[embedded.pk],
        sample_ids=[s.pk for s in samples],
        span_ids=list(SpanAnnotation.objects.order_by("id").values_list("id", flat=True)),
        tokens={
            "annotator": tokens.create_api_token(alice, "schema test")[1],
            "admin": tokens.create_api_token(admin_user, "schema test")[1],
        },
    )


def _pairs_project(admin_user: Any, alice: Any, bob: Any) -> Project:
    """A pairs project with round 1 open: bob has answered some items (and is flagged), alice has one served."""
    from tests.pairs.conftest import make_pair_items

    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=project, min_judgements=3)
    for user, role in ((admin_user, Membership.Role.ADMIN), (alice, Membership.Role.ANNOTATOR),
                       (bob, Membership.Role.ANNOTATOR)):
        Membership.objects.create(project=project, user=user, role=role)
    make_pair_items(project, 8)
    for _ in range(4):
        served = queue.serve_next_item(project, bob)
        queue.record_judgement(project, bob, served.item_id, "H")  # answered at once: too fast and all H
    queue.serve_next_item(project, alice)
    return project


SCHEMES = ["C|U", "C+B|Q+U", "C|B|Q|U"]
ROUNDS = [1, 2]
LABELS = ["Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable", "Benign"]


def _pick(pool: list[Any], drawn: Any) -> Any:
    """Most drawn values become one of pool's real values, the rest stay as drawn (most likely: no such object)."""
    if isinstance(drawn, bool) or not isinstance(drawn, int | str):
        return drawn
    number = drawn if isinstance(drawn, int) else zlib.crc32(drawn.encode("utf-8", "surrogatepass"))
    index = number % (len(pool) + 1)
    return pool[index] if index < len(pool) else drawn


def aim(case: Any, data: ProjectData) -> None:
    """Point the drawn ids, slugs and filters at the project's real objects."""
    path = case.path_parameters or {}
    if "slug" in path:
        path["slug"] = _pick([data.slug, data.pair_slug], path["slug"])
    if "id" in path:
        pool = data.sample_ids if case.path.startswith("/api/samples/") else data.span_ids
        if case.path.startswith("/api/pairs/"):
            pool = data.pair_item_ids
        elif "/flags/" in case.path:
            pool = data.flag_ids
        path["id"] = _pick(pool, path["id"])
    if "number" in path:  # a pair round's number
        path["number"] = _pick(ROUNDS, path["number"])
    query = case.query or {}
    if "project" in query:
        query["project"] = _pick([data.slug, data.pair_slug], query["project"])
    if "batch" in query:
        query["batch"] = _pick(data.batch_ids, query["batch"])
    if "scheme" in query:
        query["scheme"] = _pick(SCHEMES, query["scheme"])
    if "round" in query:
        query["round"] = _pick(ROUNDS, query["round"])
    body = case.body
    if isinstance(body, dict):
        if "sample" in body:
            body["sample"] = _pick(data.sample_ids, body["sample"])
        if "round" in body:
            body["round"] = _pick(ROUNDS, body["round"])
        if isinstance(body.get("span_ids"), list):
            body["span_ids"] = [_pick(data.span_ids, drawn) for drawn in body["span_ids"]]
        if isinstance(body.get("labels"), list):
            body["labels"] = [_pick(LABELS, drawn) for drawn in body["labels"]]
        start, end = body.get("start"), body.get("end")
        if isinstance(start, int) and isinstance(end, int) and start % 5 != 4:
            # Mostly a selection inside the (shortest) summary: the path past the offset checks.
            body["start"] = abs(start) % 50
            body["end"] = body["start"] + 1 + abs(end) % 20


EXAMPLES_PER_OPERATION = 12


@pytest.mark.django_db
def test_every_operation_answers_as_the_schema_says(api_schema: Any, project_data: ProjectData) -> None:
    """Each operation in turn; the failures of all of them are reported together."""
    failures: dict[str, str] = {}
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 20  # the schema was read, not an empty document

    for operation in operations:

        @settings(
            max_examples=EXAMPLES_PER_OPERATION, derandomize=True, deadline=None, database=None,
            phases=[Phase.generate], suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy())
        def answers_as_described(case: Any) -> None:
            aim(case, project_data)
            for token in project_data.tokens.values():
                case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)

        try:
            answers_as_described()
        except (Exception, BaseExceptionGroup) as failure:  # collected: every operation is tried
            failures[operation.label] = str(failure)
    assert not failures, "\n\n".join(f"{label}:\n{text}" for label, text in failures.items())


# --------------------------------------------------------------------------- what the schema says, read directly


def test_the_schema_describes_the_query_parameters_the_views_read(client: Any, admin_user: Any) -> None:
    client.force_login(admin_user)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = document["paths"]

    def query_names(path: str, method: str) -> set[str]:
        return {p["name"] for p in paths[path][method].get("parameters", []) if p["in"] == "query"}

    assert {"project", "batch"} <= query_names("/api/samples/", "get")
    assert "round" in query_names("/api/samples/{id}/spans/", "get")
    assert {"format", "round", "pseudonyms"} <= query_names("/api/projects/{slug}/export/", "get")
    assert "version" in query_names("/api/spans/{id}/", "delete")
    assert {"scheme", "level", "aggregate", "round", "bootstrap"} <= query_names(
        "/api/projects/{slug}/agreement/", "get"
    )
    assert {"round"} <= query_names("/api/projects/{slug}/halu-rates/", "get")
    assert {"round", "threshold"} <= query_names("/api/projects/{slug}/detector-eval/", "get")
    # The span list of a sample is not paginated: no limit/offset, a plain array.
    assert not {"limit", "offset"} & query_names("/api/samples/{id}/spans/", "get")
    spans_200 = paths["/api/samples/{id}/spans/"]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert spans_200 == {"type": "array", "items": {"$ref": "#/components/schemas/Span"}}


def test_the_detector_eval_schema_says_missing_is_part_of_invalid(client: Any, admin_user: Any) -> None:
    client.force_login(admin_user)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    ok = document["paths"]["/api/projects/{slug}/detector-eval/"]["get"]["responses"]["200"]
    keyed = ok["content"]["application/json"]["schema"]
    assert keyed["type"] == "object"
    name = keyed["additionalProperties"]["$ref"].rsplit("/", 1)[-1]
    fields = document["components"]["schemas"][name]["properties"]
    assert set(fields) == {"n", "invalid", "missing", "balanced_accuracy", "f1_macro", "rule", "reason"}
    assert "n + invalid is the number of samples" in fields["invalid"]["description"]
    assert "missing ones included" in fields["invalid"]["description"]
    assert "<= invalid" in fields["missing"]["description"]


def test_the_schema_lists_the_real_statuses_and_media_types(client: Any, admin_user: Any) -> None:
    client.force_login(admin_user)
    paths = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()["paths"]

    def statuses(path: str, method: str) -> set[str]:
        return set(paths[path][method]["responses"])

    assert statuses("/api/spans/{id}/", "patch") == {"200", "400", "401", "403", "404", "409"}
    assert statuses("/api/spans/{id}/", "delete") == {"204", "400", "401", "403", "404", "409"}
    assert statuses("/api/spans/", "post") == {"200", "201", "400", "401", "403", "409"}
    assert statuses("/api/samples/{id}/similarity/", "post") == {"200", "400", "401", "403", "404", "409", "503"}
    assert statuses("/api/projects/", "get") == {"200", "400", "401"}  # 400: a bad limit or offset
    conflict = paths["/api/spans/{id}/"]["patch"]["responses"]["409"]["content"]["application/json"]["schema"]
    assert conflict == {"$ref": "#/components/schemas/SpanConflict"}
    export_200 = paths["/api/projects/{slug}/export/"]["get"]["responses"]["200"]["content"]
    assert set(export_200) == {"application/jsonl", "text/csv", "application/zip"}
    formats = next(p for p in paths["/api/projects/{slug}/export/"]["get"]["parameters"] if p["name"] == "format")
    assert sorted(formats["schema"]["enum"]) == ["csv", "faithbench", "hades", "jsonl", "pairs"]


# --------------------------------------------------------------------------- anonymous calls


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path"),
    [("get", "/api/projects/"), ("get", "/api/samples/1/spans/"), ("post", "/api/spans/"),
     ("delete", "/api/spans/1/?version=1"), ("get", "/api/projects/demo/agreement/?scheme=C|U")],
)
def test_anonymous_api_calls_get_401_with_a_token_challenge(method: str, path: str) -> None:
    response = getattr(Client(), method)(path)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {"detail": "Authentication credentials were not provided."}


@pytest.mark.django_db
def test_a_bad_token_gets_401_and_a_session_write_without_csrf_gets_403(alice: Any) -> None:
    bad = Client().get("/api/projects/", HTTP_AUTHORIZATION="Token fl_not-a-key")
    assert bad.status_code == 401
    assert bad["WWW-Authenticate"] == "Token"
    session = Client(enforce_csrf_checks=True)
    session.force_login(alice)
    assert session.get("/api/projects/").status_code == 200
    refused = session.post("/api/spans/", {"sample": 1}, content_type="application/json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["detail"]


# --------------------------------------------------------------------------- ids and ranges as documented

HUGE = "99999999999999999999"  # past a bigint


@pytest.mark.django_db
def test_numbers_past_the_documented_ranges_get_400_and_change_nothing(sample: Any, alice: Any, admin_user: Any) -> None:
    span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
    annotator = Client()
    annotator.force_login(alice)
    admin = Client()
    admin.force_login(admin_user)
    assert annotator.get(f"/api/samples/{sample.pk}/spans/?round={HUGE}").json() == {
        "round": [f"'{HUGE}' is not a round number (1, 2, ...)"]
    }
    assert admin.get(f"/api/samples/?batch={HUGE}").json() == {"batch": [f"'{HUGE}' is not a batch id"]}
    deleted = annotator.delete(f"/api/spans/{span.pk}/?version={HUGE}")
    assert deleted.status_code == 400 and "version" in deleted.json()
    for body in ({"sample": int(HUGE), "start": 0, "end": 7, "labels": ["Benign"]},
                 {"sample": sample.pk, "round": int(HUGE), "start": 0, "end": 7, "labels": ["Benign"]}):
        created = annotator.post("/api/spans/", body, content_type="application/json")
        assert created.status_code == 400, body
    changed = annotator.patch(f"/api/spans/{span.pk}/", {"version": int(HUGE), "note": "x"},
                              content_type="application/json")
    assert changed.status_code == 400 and "version" in changed.json()
    export = admin.get(f"/api/projects/demo/export/?format=jsonl&round={HUGE}")
    assert export.status_code == 400 and "round" in export.json()
    assert SpanAnnotation.objects.get(pk=span.pk).version == 1


@pytest.mark.django_db
@pytest.mark.parametrize("path", [f"/api/samples/{HUGE}/", "/api/samples/abc/", f"/api/samples/{HUGE}/spans/"])
def test_sample_ids_that_cannot_exist_are_not_found(path: str, alice: Any) -> None:
    client = Client()
    client.force_login(alice)
    assert client.get(path).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("path", [f"/api/spans/{HUGE}/", "/api/spans/x/", "/api/spans/1.5/"])
def test_span_ids_that_cannot_exist_are_not_found_for_writes_too(path: str, alice: Any) -> None:
    """PATCH and DELETE of /api/spans/x/ were 500s: the view ran int("x")."""
    client = Client()
    client.force_login(alice)
    assert client.get(path).status_code == 404
    assert client.patch(path, {"version": 1}, content_type="application/json").status_code == 404
    assert client.delete(path + "?version=1").status_code == 404


def test_the_schema_builds_without_warnings(tmp_path: Any) -> None:
    """drf-spectacular's warnings (an enum name clash, a field it cannot type) also show in `check --deploy`, where
    the README says to look for what a deployment still lacks; the schema must give none."""
    from django.core.management import call_command

    call_command("spectacular", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert "ProgressStatusEnum" in (tmp_path / "schema.yaml").read_text()
