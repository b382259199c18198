"""The span figures (agreement, halu-rates, detector-eval) on a pairs project: a 400 on ``project`` saying it is a
pairs project and where its figures are, not "no round 1" (a pairs project has no span rounds)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from annotate.models import Membership, Project
from tests.conftest import login
from tests.pairs.conftest import make_pair_items

pytestmark = pytest.mark.django_db

FIGURES = ["agreement/?scheme=C|U", "halu-rates/", "detector-eval/", "agreement/", "halu-rates/?round=x"]


@pytest.fixture
def pairs(admin_user: Any, alice: Any) -> Project:
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    Membership.objects.create(project=project, user=alice, role=Membership.Role.ANNOTATOR)
    make_pair_items(project, 2)
    return project


@pytest.mark.parametrize("figure", FIGURES)
def test_a_span_figure_of_a_pairs_project_is_a_400_pointing_at_its_own_figures(
    figure: str, pairs: Project, admin_user: Any
) -> None:
    response = login(admin_user).get(f"/api/projects/pairs/{figure}")
    assert response.status_code == 400
    body = response.json()
    assert list(body) == ["project"] and len(body["project"]) == 1
    message = body["project"][0]
    assert message.startswith("'pairs' is a pairs project: agreement, hallucination rates and detector evaluation")
    assert "no round" not in message
    for address in ("/api/projects/pairs/pair-rounds/", "/api/pairs/?project=pairs",
                    "/api/projects/pairs/export/?format=pairs"):
        assert address in message
    assert login(admin_user).get("/api/projects/pairs/pair-rounds/").status_code == 200  # where it points


def test_the_roles_still_come_first_annotators_403_outsiders_404(pairs: Project, alice: Any, charlie: Any) -> None:
    assert login(alice).get("/api/projects/pairs/halu-rates/").status_code == 403
    assert login(charlie).get("/api/projects/pairs/halu-rates/").status_code == 404


def test_the_400_is_the_one_the_schema_documents(pairs: Project, admin_user: Any) -> None:
    client = login(admin_user)
    document = json.loads(client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").content)
    for figure in ("agreement", "halu-rates", "detector-eval"):
        documented = document["paths"][f"/api/projects/{{slug}}/{figure}/"]["get"]["responses"]["400"]
        jsonschema.validate(client.get(f"/api/projects/pairs/{figure}/").json(),
                            documented["content"]["application/json"]["schema"])
