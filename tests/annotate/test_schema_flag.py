"""The schema of the flag endpoint lists, per method, the statuses that method really answers."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def test_each_flag_method_lists_only_its_own_successes(alice: Any) -> None:
    client = APIClient()
    client.force_authenticate(alice)
    schema = json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    operations = schema["paths"]["/api/samples/{id}/flag/"]
    successes = {method: sorted(code for code in operation["responses"] if code.startswith("2"))
                 for method, operation in operations.items() if method in ("get", "post", "delete")}
    # GET shows the flag (404 when there is none); POST raises (201) or changes (200) it; DELETE withdraws it.
    assert successes == {"get": ["200"], "post": ["200", "201"], "delete": ["204"]}
    assert [p["name"] for p in operations["get"]["parameters"] if p["in"] == "query"] == ["round"]
    assert "requestBody" in operations["post"]
    for method in ("get", "post", "delete"):
        assert {"401", "403", "404"} <= set(operations[method]["responses"]), method
