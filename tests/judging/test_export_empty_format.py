"""``?format=`` (empty) on the judgements and audits downloads is a 400 naming ``format``, as the schema says
(minLength 1); it used to answer 200 with JSONL, the default, as if no format had been sent."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Batch
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("what", ["judgements", "audits"])
def test_an_empty_format_is_a_400_naming_it(what: str, batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get(f"/api/projects/demo/{what}/export/?format=")
    assert response.status_code == 400
    assert response.json() == {"format": ['"" is not a format: choose jsonl or csv']}


@pytest.mark.parametrize("what", ["judgements", "audits"])
def test_no_format_still_means_jsonl(what: str, batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get(f"/api/projects/demo/{what}/export/")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"


def test_an_empty_run_is_a_400_naming_it_beside_the_format(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get("/api/projects/demo/judgements/export/?format=&run=")
    assert response.status_code == 400
    assert set(response.json()) == {"format", "run"}
