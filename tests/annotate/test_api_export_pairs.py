"""GET /api/projects/<slug>/export/ serves a pairs project in its formats (pairs, hades), as the project page's
links do; a format of the other kind of project is a 400 on ``format`` naming the project's kind and formats.

A pairs project used to answer jsonl, csv and faithbench with 200 and an empty
file, and pairs or hades with "not a valid choice". Every problem of a request
is named in one answer (no format and a round the project lacks: both).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Batch, Membership, Project
from annotate.services.pairs import export as pair_export
from annotate.services.pairs import queue
from tests.conftest import login
from tests.pairs.conftest import make_pair_items

pytestmark = pytest.mark.django_db

SPAN_KIND = "'demo', a span annotation project; its formats are faithbench, jsonl, csv"
PAIRS_KIND = "'pairs', a pairs project; its formats are pairs, hades"


@pytest.fixture
def pairs(admin_user: Any, alice: Any, bob: Any) -> Project:
    """A pairs project of three items in round 1; alice answered the first one H."""
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    for user, role in ((admin_user, Membership.Role.ADMIN), (alice, Membership.Role.ANNOTATOR),
                       (bob, Membership.Role.AUDITOR)):
        Membership.objects.create(project=project, user=user, role=role)
    make_pair_items(project, 3)
    served = queue.serve_next_item(project, alice)
    queue.record_judgement(project, alice, served.item_id, "H")
    return project


def body(response: Any) -> str:
    assert response.streaming, "streamed a line at a time, as the page's download is"
    return b"".join(response.streaming_content).decode()


@pytest.mark.parametrize("fmt", ["pairs", "hades"])
def test_a_pairs_project_exports_in_its_formats_as_the_service_writes_them(
    fmt: str, pairs: Project, admin_user: Any, bob: Any
) -> None:
    for user in (admin_user, bob):  # admins and auditors, as the page
        response = login(user).get(f"/api/projects/pairs/export/?format={fmt}")
        assert response.status_code == 200
        assert response["Content-Type"] == "application/jsonl; charset=utf-8"
        assert response["Content-Disposition"] == f'attachment; filename="pairs-{fmt}.jsonl"'
        text = body(response)
        assert text == pair_export.export_pairs(pairs, fmt)
        assert len(text.splitlines()) == 3


def test_the_pairs_export_carries_the_answers(pairs: Project, admin_user: Any) -> None:
    rows = [json.loads(line) for line in body(login(admin_user).get("/api/projects/pairs/export/?format=pairs"))
            .splitlines()]
    assert sorted(row["votes"]["H"] for row in rows) == [0, 0, 1]
    assert {row["round"] for row in rows} == {1}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "faithbench"])
def test_a_span_format_on_a_pairs_project_is_a_400_naming_its_kind_and_formats(
    fmt: str, pairs: Project, admin_user: Any
) -> None:
    response = login(admin_user).get(f"/api/projects/pairs/export/?format={fmt}")
    assert response.status_code == 400
    assert response.json() == {"format": [f"'{fmt}' does not apply to {PAIRS_KIND}"]}


@pytest.mark.parametrize("fmt", ["pairs", "hades"])
def test_a_pairs_format_on_a_span_project_is_a_400_naming_its_kind_and_formats(
    fmt: str, batch: Batch, admin_user: Any
) -> None:
    response = login(admin_user).get(f"/api/projects/demo/export/?format={fmt}")
    assert response.status_code == 400
    assert response.json() == {"format": [f"'{fmt}' does not apply to {SPAN_KIND}"]}


def test_a_round_on_a_pairs_export_is_refused_as_its_lines_carry_every_round(pairs: Project, admin_user: Any) -> None:
    response = login(admin_user).get("/api/projects/pairs/export/?format=pairs&round=1")
    assert response.json() == {"round": [
        "'pairs' is a pairs project: its export holds every round's items, each line with its round; leave round out"
    ]}


def test_the_roles_are_the_pages_annotators_403_outsiders_404(pairs: Project, alice: Any, charlie: Any) -> None:
    assert login(alice).get("/api/projects/pairs/export/?format=pairs").status_code == 403
    assert login(charlie).get("/api/projects/pairs/export/?format=pairs").status_code == 404


def test_no_format_and_a_round_the_project_lacks_are_named_together(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get("/api/projects/demo/export/?round=9")
    assert response.status_code == 400
    assert response.json() == {
        "format": ["choose a format: faithbench, jsonl, csv for a span annotation project, pairs, hades for a "
                   "pairs project"],
        "round": ["project 'demo' has no round 9 (its rounds: 1)"],
    }


def test_a_bad_format_and_a_round_that_is_no_number_are_named_together(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get("/api/projects/demo/export/?format=xml&round=two&pseudonyms=")
    assert set(response.json()) == {"format", "round", "pseudonyms"}


@pytest.mark.django_db
def test_an_unknown_or_empty_format_is_refused_naming_the_formats_of_both_kinds(project: Project, admin_user: Any
                                                                              ) -> None:
    client = login(admin_user)
    for value in ("xml", ""):
        answer = client.get(f"/api/projects/{project.slug}/export/?format={value}")
        assert answer.status_code == 400
        (message,) = answer.json()["format"]
        assert f'format "{value}" is not an export format' in message
        assert "faithbench" in message and "hades" in message
