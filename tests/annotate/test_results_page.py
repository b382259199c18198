"""The results page (rates, ranks, chart, detectors, challenging samples), the batches made from its
selection, and the agreement and results API. The scene is in results_scene.py."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Batch, Sample
from annotate.results import rank_generators
from annotate.services import agreement_admin, stats
from tests.annotate.results_scene import HTMX, Tags, run_json, span, tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


# --------------------------------------------------------------------------- results page


def test_results_page_rates_and_ranks_equal_stats(scene: dict[str, Any]) -> None:
    page = tags(login(scene["audrey"]).get("/projects/demo/results/"))
    rates = stats.project_halu_rates(scene["project"], 1)
    ranks = rank_generators(rates)
    for generator, row in rates.items():
        assert int(page.one("tr", data_generator=generator)["data-n"]) == row["n"]
    rate_cells = [cell for cell in page.find("td") if "data-rate" in cell]
    rank_cells = [cell for cell in page.find("td") if "data-rank" in cell]
    order = sorted(rates, key=lambda generator: (rates[generator]["U+Q"], generator))
    expected = [(column, rates[g][column]) for g in order for column in ("U", "U+Q", "U+Q+B")]
    assert [(cell["data-column"], float(cell["data-rate"])) for cell in rate_cells] == expected
    assert [int(cell["data-rank"]) for cell in rank_cells] == [
        ranks[column][g] for g in order for column in ("U", "U+Q", "U+Q+B")
    ]


def test_results_page_chart_is_inline_svg_with_one_bar_per_generator(scene: dict[str, Any]) -> None:
    response = login(scene["admin"]).get("/projects/demo/results/")
    html = response.content.decode()
    page = Tags(html)
    svg = page.one("svg", data_role="worst-label-chart")
    assert svg["role"] == "img" and "worst-chart-title" in svg["aria-labelledby"]
    assert "<title id=\"worst-chart-title\">" in html and "http" not in html.split("<svg", 1)[1].split("xmlns", 1)[0]
    bars = [g for g in page.find("g") if "data-generator" in g]
    generators = sorted(stats.project_halu_rates(scene["project"], 1))
    assert sorted(bar["data-generator"] for bar in bars) == generators
    # model-a: s0 (U), t0 (U), t3 (C) -> U 2, C 1.
    segments = {(rect["data-label"], rect["data-count"]) for rect in page.find("rect") if "data-count" in rect}
    assert ("U", "2") in segments
    assert 'data-role="legend"' in html and "cdn" not in html.lower()


def test_results_page_detector_table_equals_stats_and_follows_the_threshold(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    for threshold in ("0.5", "0.75"):
        page = tags(client.get(f"/projects/demo/results/?threshold={threshold}"))
        report = stats.project_detector_eval(scene["project"], float(threshold), 1)
        assert set(report) == {"hhem", "gpt"}
        html_rows = {row["data-detector"] for row in page.find("tr") if "data-detector" in row}
        assert html_rows == set(report)
    html = client.get("/projects/demo/results/?threshold=0.75").content.decode()
    report = stats.project_detector_eval(scene["project"], 0.75, 1)
    assert f"{report['hhem']['balanced_accuracy']:.2f}" in html and f"{report['hhem']['f1_macro']:.2f}" in html


def test_results_page_challenging_selection_keeps_groups_with_at_least_k(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    page = tags(client.get("/projects/demo/results/?k=2"))
    kept = [row["data-passage"] for row in page.find("tr") if "data-passage" in row]
    passages = [scene["batch1"].samples.first().passage_id, scene["t"][0].passage_id]
    assert kept == [str(pk) for pk in passages]
    assert page.find("form", data_role="create-batches")
    none = tags(client.get("/projects/demo/results/?k=3"))
    assert [row for row in none.find("tr") if "data-passage" in row] == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("threshold=2", "threshold: must be a number between 0 and 1, not '2'"),
        ("threshold=nan", "threshold: must be a number between 0 and 1"),
        ("k=0", "k: must be a whole number at least 1, not '0'"),
        ("round=9", "round: the project has no round 9"),
    ],
)
def test_results_page_rejects_bad_parameters(scene: dict[str, Any], query: str, message: str) -> None:
    for extra in ({}, HTMX):
        response = login(scene["admin"]).get(f"/projects/demo/results/?{query}", **extra)
        assert response.status_code == 400
        assert message in response.content.decode().replace("&#x27;", "'")


def test_results_page_htmx_request_gets_only_the_figures(scene: dict[str, Any]) -> None:
    html = login(scene["admin"]).get("/projects/demo/results/?k=2", **HTMX).content.decode()
    assert html.lstrip().startswith('<div id="results-figures">') and "<html" not in html
    assert 'data-role="worst-label-chart"' in html


def test_a_new_span_changes_the_cached_results(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])  # model-a's t3 becomes U
    page = tags(client.get("/projects/demo/results/"))
    cell = [c for c in page.find("td", data_column="U") if "data-rate" in c]
    rates = stats.project_halu_rates(scene["project"], 1)
    assert rates["model-a"]["U"] == 100.0
    assert 100.0 in [float(c["data-rate"]) for c in cell]


# --------------------------------------------------------------------------- batches from the selection


def test_admin_creates_batches_from_the_selection(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    before = Sample.objects.count()
    response = client.post(
        "/projects/demo/results/selection/",
        {"k": "2", "threshold": "0.5", "name_prefix": "hard", "passages_per_batch": "1"},
    )
    assert response.status_code == 302 and response["Location"] == "/projects/demo/"
    new = list(Batch.objects.filter(project=scene["project"], name__startswith="hard-").order_by("position"))
    assert [batch.name for batch in new] == ["hard-1", "hard-2"]
    assert new[0].position > scene["batch2"].position
    first = list(new[0].samples.order_by("position"))
    originals = list(scene["batch1"].samples.order_by("position"))
    assert [(s.passage_id, s.summary, s.generator, s.metadata, s.external_id) for s in first] == [
        (s.passage_id, s.summary, s.generator, s.metadata, s.external_id) for s in originals
    ]
    assert {s.pk for s in first}.isdisjoint({s.pk for s in originals})
    assert new[1].samples.count() == 4 and Sample.objects.count() == before + 7
    # The originals keep their batch, spans and agreement.
    assert scene["batch1"].samples.count() == 3


def test_creating_batches_is_all_or_nothing_and_admin_only(scene: dict[str, Any]) -> None:
    project = scene["project"]
    passage_ids = [scene["s"][0].passage_id, scene["t"][0].passage_id]
    agreement_admin.create_batches_from_selection(project, passage_ids, "again", passages_per_batch=5)
    assert Batch.objects.filter(project=project, name="again-1").exists()
    count = Sample.objects.count()
    with pytest.raises(agreement_admin.AgreementAdminError, match="name_prefix: batch 'again-1' already exists"):
        agreement_admin.create_batches_from_selection(project, passage_ids, "again")
    with pytest.raises(agreement_admin.AgreementAdminError, match="passage_ids: the selection is empty"):
        agreement_admin.create_batches_from_selection(project, [], "x")
    with pytest.raises(agreement_admin.AgreementAdminError, match="passage_ids: not passages of project 'demo'"):
        agreement_admin.create_batches_from_selection(project, [999_999], "x")
    with pytest.raises(agreement_admin.AgreementAdminError, match="name_prefix"):
        agreement_admin.create_batches_from_selection(project, passage_ids, "  ")
    # Copies already in "again-1" are not copied twice.
    made = agreement_admin.create_batches_from_selection(project, passage_ids, "third")
    assert made[0].samples.count() == 7
    assert Sample.objects.count() == count + 7
    body = {"k": "2", "name_prefix": "nope"}
    assert login(scene["audrey"]).post("/projects/demo/results/selection/", body).status_code == 403
    assert not Batch.objects.filter(name__startswith="nope").exists()
    failed = login(scene["admin"]).post("/projects/demo/results/selection/", {"k": "9", "name_prefix": "nope"})
    assert failed.status_code == 302 and "/results/" in failed["Location"]
    assert not Batch.objects.filter(name__startswith="nope").exists()


# --------------------------------------------------------------------------- API


def test_api_agreement_equals_the_command_json(scene: dict[str, Any]) -> None:
    client = login(scene["audrey"])
    for scheme, level, aggregate, extra in [
        ("C|B|Q|U", "nominal", "pooled", ["--bootstrap", "50"]),
        ("C+B|Q+U", "ordinal", "batch-mean", []),
        ("c + b | q | u", "interval", "pooled", []),
    ]:
        expected = run_json(
            "agreement", "--scheme", scheme, "--level", level, "--aggregate", aggregate, "--round", "1", *extra
        )
        query = {"scheme": scheme, "level": level, "aggregate": aggregate, "round": 1}
        if extra:
            query["bootstrap"] = extra[1]
        response = client.get("/api/projects/demo/agreement/", query)
        assert response.status_code == 200
        assert response.json() == expected


def test_api_rates_and_detectors_equal_the_command_json(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    assert client.get("/api/projects/demo/halu-rates/?round=1").json() == run_json("halu_rates")
    assert client.get("/api/projects/demo/detector-eval/?threshold=0.7").json() == run_json(
        "detector_eval", "--threshold", "0.7"
    )


@pytest.mark.parametrize(
    ("url", "field", "message"),
    [
        ("/api/projects/demo/agreement/", "scheme", "This field is required."),
        ("/api/projects/demo/agreement/?scheme=C|K", "scheme", "unknown category 'K'"),
        ("/api/projects/demo/agreement/?scheme=C|U&level=ratio", "level", "not a valid choice"),
        ("/api/projects/demo/agreement/?scheme=C|U&round=4", "round", "has no round 4"),
        ("/api/projects/demo/agreement/?scheme=C|U&aggregate=batch-mean&bootstrap=10", "bootstrap", "pooled"),
        ("/api/projects/demo/halu-rates/?round=x", "round", "valid integer"),
        ("/api/projects/demo/detector-eval/?threshold=1.5", "threshold", "less than or equal to 1"),
        ("/api/projects/demo/detector-eval/?threshold=nan", "threshold", "valid number"),
    ],
)
def test_api_bad_parameters_are_400_naming_the_field(scene: dict[str, Any], url: str, field: str, message: str) -> None:
    response = login(scene["admin"]).get(url)
    assert response.status_code == 400
    assert message in " ".join(response.json()[field])


def test_api_schema_documents_the_results_endpoints(scene: dict[str, Any]) -> None:
    schema = login(scene["admin"]).get("/api/schema/", {"format": "json"}).content.decode()
    for path in ("/api/projects/{slug}/agreement/", "/api/projects/{slug}/halu-rates/",
                 "/api/projects/{slug}/detector-eval/"):
        assert path in schema
    assert "bootstrap_resamples" in schema and "balanced_accuracy" in schema


def test_a_k_that_keeps_no_group_says_how_low_k_must_go(scene: dict[str, Any]) -> None:
    everything = stats.challenging_groups(scene["project"], 1, 0.5)
    most = max(group["challenging"] for group in everything["kept"])
    assert everything["most_challenging"] == most
    client = login(scene["admin"])
    html = client.get(f"/projects/demo/results/?k={most + 5}").content.decode()
    assert 'data-role="no-group-kept"' in html
    assert f"the most any group has is {most}, so set k to {most} or lower above to keep some" in html
    kept = client.get(f"/projects/demo/results/?k={most}").content.decode()
    assert 'data-role="no-group-kept"' not in kept and 'data-role="create-batches"' in kept
