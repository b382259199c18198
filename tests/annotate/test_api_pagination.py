"""Paginated lists take ``limit`` 1..1000 and ``offset`` from 0; anything else is a 400 naming the parameter.

DRF's LimitOffsetPagination used its defaults instead (``limit=abc`` gave 100
items, ``offset=-5`` the first page) and took any limit.
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from annotate.api.pagination import MAX_LIMIT
from annotate.models import Batch, Membership, Project, Sample
from tests.conftest import login
from tests.pairs.conftest import make_pair_items

pytestmark = pytest.mark.django_db

BAD_LIMIT = "is not a page size: send a whole number of items from 1 to 1000 (default 100)"
BAD_OFFSET = "is not an offset: send a whole number of items to skip, from 0 (the first page)"


@pytest.mark.parametrize("raw", ["abc", "-1", "0", "1001", "2.5", "", " 5", "99999999999999999999"])
def test_a_bad_limit_is_a_400_naming_it(raw: str, batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get("/api/samples/", {"limit": raw})
    assert response.status_code == 400
    assert response.json() == {"limit": [f"{raw!r} {BAD_LIMIT}"]}


@pytest.mark.parametrize("raw", ["x", "-5", "1e3", "", "9999999999999999999"])
def test_a_bad_offset_is_a_400_naming_it(raw: str, batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get("/api/projects/", {"offset": raw})
    assert response.status_code == 400
    assert response.json() == {"offset": [f"{raw!r} {BAD_OFFSET}"]}


def test_both_bad_parameters_are_named_in_one_answer(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get("/api/spans/?limit=-1&offset=no")
    assert response.json() == {"limit": [f"'-1' {BAD_LIMIT}"], "offset": [f"'no' {BAD_OFFSET}"]}


@pytest.mark.parametrize("path", ["/api/projects/demo/judge-runs/?limit=lots", "/api/pairs/?project=pairs&limit=lots"])
def test_the_judging_and_pairs_lists_refuse_a_bad_limit_too(path: str, batch: Batch, admin_user: Any) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=admin_user, role=Membership.Role.ADMIN)
    make_pair_items(pairs, 2)
    response = login(admin_user).get(path)
    assert response.status_code == 400
    assert response.json() == {"limit": [f"'lots' {BAD_LIMIT}"]}
    assert login(admin_user).get(path.replace("lots", "1")).json()["count"] >= 0


def test_good_values_page_through_the_list_and_the_ceiling_is_allowed(batch: Batch, admin_user: Any) -> None:
    client = login(admin_user)
    ids = list(Sample.objects.filter(batch=batch).order_by("position", "id").values_list("id", flat=True))
    first = client.get("/api/samples/?limit=1").json()
    assert first["count"] == len(ids) and [row["id"] for row in first["results"]] == ids[:1]
    rest = client.get("/api/samples/?limit=2&offset=1").json()
    assert [row["id"] for row in rest["results"]] == ids[1:3]
    assert client.get(f"/api/samples/?limit={MAX_LIMIT}").json()["count"] == len(ids)
    assert client.get("/api/samples/?offset=500").json()["results"] == []


def test_the_schema_gives_the_ranges_and_the_400(admin_user: Any, batch: Batch) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    operation = document["paths"]["/api/projects/"]["get"]
    parameters = {p["name"]: p["schema"] for p in operation["parameters"]}
    assert parameters["limit"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    assert parameters["offset"]["minimum"] == 0 and parameters["offset"]["type"] == "integer"
    refused = login(admin_user).get("/api/projects/?limit=0&offset=-1").json()
    body_schema = operation["responses"]["400"]["content"]["application/json"]["schema"]
    jsonschema.validate(refused, body_schema)
