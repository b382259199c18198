"""Round 2's figures through the results API agree with the results page for the same project and round.

A round's figures are those of its submitted verdicts (the worst label over the annotators who submitted the
batch in that round), so with round 2 open and nobody done with it there is no rate and no detector score yet. The
page says so and names the metadata detectors it cannot score; the API answered ``{}`` for the rates and dropped
the metadata detectors while listing the judges with null figures. Now every generator and every detector has a row,
with n 0, null figures and a reason; once round 2 is submitted, the API's numbers are the page's.
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Assignment, Batch
from annotate.services import rounds, stats
from judging.models import Judge, Judgement, JudgeRun
from tests.annotate.results_scene import tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


@pytest.fixture
def round_two(scene: dict[str, Any]) -> dict[str, Any]:
    """The results scene with round 2 of batch-1 open (its round-1 spans copied), nobody done with it, and a judge
    that judged batch-1's samples."""
    rounds.open_reconciliation_round(scene["batch1"])
    project = scene["project"]
    judge = Judge.objects.create(project=project, name="Aardvark", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    for sample, score in zip(scene["s"], (2, 5, 4), strict=True):
        Judgement.objects.create(run=run, sample=sample, status="ok", score=score)
    return scene


def api(scene: dict[str, Any], figure: str, round: int = 2) -> dict[str, Any]:
    response = login(scene["admin"]).get(f"/api/projects/demo/{figure}/", {"round": round})
    assert response.status_code == 200, response.content
    return response.json()


def page(scene: dict[str, Any], round: int = 2) -> Any:
    response = login(scene["admin"]).get("/projects/demo/results/", {"round": round})
    assert response.status_code == 200
    return tags(response)


def test_before_round_two_is_submitted_every_generator_has_null_rates_and_a_reason(round_two: dict[str, Any]) -> None:
    rates = api(round_two, "halu-rates")
    assert set(rates) == {"model-a", "model-b", "model-c"}
    for row in rates.values():
        assert row["n"] == 0 and row["U"] is None and row["U+Q"] is None and row["U+Q+B"] is None
        assert "no sample has a submitted verdict in round 2" in row["reason"]
    assert page(round_two).find("tr", data_generator="model-a") == []  # the page: "No submitted samples"


def test_before_round_two_is_submitted_every_detector_is_listed_with_a_reason(round_two: dict[str, Any]) -> None:
    report = api(round_two, "detector-eval")
    shown = page(round_two)
    on_page = shown.one("p", data_role="unscored-detectors")["data-detectors"].split(",")
    judges_on_page = [row["data-detector"] for row in shown.find("tr") if "data-detector" in row]
    assert list(report) == ["gpt", "hhem", "judge:Aardvark"]
    assert set(report) == set(on_page) | set(judges_on_page)
    for name, row in report.items():
        assert row["n"] == 0 and row["balanced_accuracy"] is None and row["f1_macro"] is None, name
        assert "no sample has a submitted verdict in round 2" in row["reason"] and name in row["reason"]
    # The metadata detectors keep their rule, read from every output: gpt answers 0/1.
    assert report["gpt"]["rule"] == "1 = consistent (0/1 verdict)" and report["hhem"]["rule"] == "p >= 0.5"


def test_once_round_two_is_submitted_the_api_gives_the_pages_figures(round_two: dict[str, Any]) -> None:
    Assignment.objects.filter(batch=round_two["batch1"], round=2).update(status=Assignment.Status.SUBMITTED)
    rates, report, shown = api(round_two, "halu-rates"), api(round_two, "detector-eval"), page(round_two)
    for generator in ("model-a", "model-b", "model-c"):
        row = shown.one("tr", data_generator=generator)
        assert rates[generator]["n"] == int(row["data-n"]) > 0
        assert "reason" not in rates[generator]
    for name in ("gpt", "hhem", "judge:Aardvark"):
        assert shown.one("tr", data_detector=name)
        assert report[name]["n"] > 0 and "reason" not in report[name]


def test_a_detector_without_outputs_on_the_judged_samples_says_so(scene: dict[str, Any]) -> None:
    """A detector only an unsubmitted batch has outputs of: the page names it under the table, the API lists it
    with n 0, every judged sample counted as missing, and the reason."""
    project = scene["project"]
    extra = Batch.objects.create(project=project, name="batch-3", position=2)
    source = scene["t"][0]
    source.pk = None
    source.batch, source.external_id, source.summary = extra, "u0", "Unjudged summary."
    source.metadata = {**source.metadata, "trueteacher": 0.4}
    source.save()
    report = api(scene, "detector-eval", round=1)
    assert report["trueteacher"]["n"] == 0
    judged = sum(row["n"] for row in api(scene, "halu-rates", round=1).values())
    assert report["trueteacher"]["missing"] == report["trueteacher"]["invalid"] == judged
    assert f"none of the {judged} samples with a submitted verdict in round 1 has an output of trueteacher" in (
        report["trueteacher"]["reason"]
    )
    assert "trueteacher" in page(scene, round=1).one("p", data_role="unscored-detectors")["data-detectors"]


def test_where_every_figure_is_defined_the_api_still_equals_the_commands(scene: dict[str, Any]) -> None:
    assert api(scene, "halu-rates", round=1) == stats.project_halu_rates(scene["project"], 1)
    assert api(scene, "detector-eval", round=1) == stats.project_detector_eval(scene["project"], 0.5, 1)


def test_the_schema_says_rates_may_be_null_with_a_reason(scene: dict[str, Any]) -> None:
    document = login(scene["admin"]).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    ok = document["paths"]["/api/projects/{slug}/halu-rates/"]["get"]["responses"]["200"]
    row = ok["content"]["application/json"]["schema"]["additionalProperties"]
    assert row["properties"]["U+Q"]["nullable"] is True
    assert "reason" in row["properties"] and "reason" not in row["required"]
