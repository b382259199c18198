"""An empty query parameter (``?level=``) is a 400 naming it, as ``?format=`` is, never its default or "no filter".

DRF reads a query as a form, where an empty optional value counts as not sent: ``?level=`` answered the nominal
alpha, ``?round=`` round 1's figures, ``?state=`` every item. A client that builds its query from an unset
variable learns so instead of getting other figures than it meant (annotate.api.validation.QueryParamsSerializer).
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Batch, JudgeFlag, Membership, Project, Sample
from annotate.services import flags
from tests.conftest import login
from tests.pairs.conftest import make_pair_items

pytestmark = pytest.mark.django_db

AGREEMENT = "/api/projects/demo/agreement/?scheme=C|U"


@pytest.fixture
def pairs(admin_user: Any) -> Project:
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    make_pair_items(project, 2)
    return project


@pytest.mark.parametrize(
    "url",
    [
        f"{AGREEMENT}&level=", f"{AGREEMENT}&aggregate=", f"{AGREEMENT}&round=", f"{AGREEMENT}&bootstrap=",
        "/api/projects/demo/halu-rates/?round=", "/api/projects/demo/detector-eval/?threshold=",
        "/api/projects/demo/detector-eval/?round=",
    ],
)
def test_an_empty_figure_parameter_is_a_400_naming_it(batch: Batch, admin_user: Any, url: str) -> None:
    parameter = url.rsplit("&", 1)[-1].rsplit("?", 1)[-1].removesuffix("=")
    response = login(admin_user).get(url)
    assert response.status_code == 400
    errors = response.json()
    assert list(errors) == [parameter]
    assert len(errors[parameter]) == 1 and errors[parameter][0].startswith(f"{parameter} is empty: send ")
    assert f"leave {parameter} out for its default" in errors[parameter][0]


def test_every_empty_parameter_is_named_in_one_answer(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get(f"{AGREEMENT}&level=&aggregate=&round=")
    assert response.status_code == 400
    assert set(response.json()) == {"level", "aggregate", "round"}


def test_a_parameter_left_out_still_takes_its_default(batch: Batch, admin_user: Any) -> None:
    report = login(admin_user).get(AGREEMENT)
    assert report.status_code == 200
    assert (report.json()["level"], report.json()["aggregate"], report.json()["round"]) == ("nominal", "pooled", 1)
    assert login(admin_user).get("/api/projects/demo/halu-rates/").status_code == 200


@pytest.mark.parametrize("query", ["round=", "state="])
def test_an_empty_pair_item_filter_is_a_400_naming_it(pairs: Project, admin_user: Any, query: str) -> None:
    parameter = query.removesuffix("=")
    response = login(admin_user).get(f"/api/pairs/?project=pairs&{query}")
    assert response.status_code == 400
    assert list(response.json()) == [parameter]
    assert response.json()[parameter][0].endswith(f", or leave {parameter} out")  # no filter, not a default


def test_an_empty_flag_status_is_a_400_naming_it(pairs: Project, admin_user: Any) -> None:
    response = login(admin_user).get("/api/projects/pairs/flags/?status=")
    assert response.status_code == 400
    assert response.json() == {"status": ["status is empty: send one of open, dismissed, blocked, or leave status out"]}
    assert not JudgeFlag.objects.exists()  # refused before any judge was checked


@pytest.mark.parametrize("method", ["get", "delete"])
def test_an_empty_round_of_a_sample_flag_is_a_400_naming_it(sample: Sample, alice: Any, method: str) -> None:
    flags.flag_sample(sample, alice, round=1, kind="skip")
    response = getattr(login(alice), method)(f"/api/samples/{sample.pk}/flag/?round=")
    assert response.status_code == 400
    assert response.json() == {
        "round": ["round is empty: send a round number (1, 2, ...), or leave round out for its default (1)"]
    }
    assert flags.own_flag(sample, alice, round=1) is not None  # not withdrawn


@pytest.mark.parametrize("parameter", ["project", "batch"])
def test_an_empty_sample_filter_is_a_400_naming_it(batch: Batch, alice: Any, parameter: str) -> None:
    response = login(alice).get(f"/api/samples/?{parameter}=")
    assert response.status_code == 400
    assert list(response.json()) == [parameter]
    assert login(alice).get("/api/samples/").json()["count"] == batch.samples.count()


def test_the_schema_gives_the_sample_filter_no_empty_value(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    parameters = {p["name"]: p for p in document["paths"]["/api/samples/"]["get"]["parameters"]}
    assert parameters["project"]["schema"]["minLength"] == 1


@pytest.mark.parametrize(
    ("url", "parameter"),
    [("/api/samples/{sample}/spans/?round=²", "round"), ("/api/samples/{sample}/flag/?round=²", "round"),
     ("/api/samples/?batch=²", "batch")],
)
def test_a_number_in_other_digits_is_a_400_naming_it(sample: Sample, alice: Any, url: str, parameter: str) -> None:
    # "²" passes str.isdigit() but int() refuses it: it answered 500.
    response = login(alice).get(url.format(sample=sample.pk))
    assert response.status_code == 400
    assert list(response.json()) == [parameter]


def test_both_empty_sample_filters_are_named_in_one_answer(batch: Batch, alice: Any) -> None:
    response = login(alice).get("/api/samples/?project=&batch=")
    assert response.status_code == 400
    assert set(response.json()) == {"project", "batch"}
