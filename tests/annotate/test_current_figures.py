"""Figures that are never stale yet not worked out again on every request: the results and agreement APIs and the
curation list keep one figure set per data version (results_cache.current_figures), and every write they rest on
changes that version. The scene is in results_scene.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from annotate.models import Assignment, GoldLabel, SampleReview, SpanAnnotation
from annotate.services import curation, freeze, results_cache, stats
from judging.models import Judge, Judgement, JudgeRun
from tests.annotate.results_scene import span
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times each figure set was worked out (the stats call behind it), by kind."""
    calls: dict[str, int] = {}
    for kind in ("api-agreement", "api-halu-rates", "api-detector-eval", "curation"):
        original = results_cache.FIGURE_SETS.get(kind)

        def counting(*args: Any, _kind: str = kind, _original: Any = original, **kwargs: Any) -> Any:
            calls[_kind] = calls.get(_kind, 0) + 1
            return _original(*args, **kwargs)

        monkeypatch.setitem(results_cache.FIGURE_SETS, kind, counting)
    return calls


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


API = {
    "api-agreement": ("/api/projects/demo/agreement/?scheme=C|U",
                      lambda project: stats.project_agreement(project, "C|U")),
    "api-halu-rates": ("/api/projects/demo/halu-rates/", lambda project: stats.explained_halu_rates(project, 1)),
    "api-detector-eval": ("/api/projects/demo/detector-eval/",
                          lambda project: stats.explained_detector_eval(project, 0.5, 1, "UQ")),
}


@pytest.mark.parametrize("kind", list(API))
def test_a_stats_api_works_its_figures_out_once_per_data_version_and_a_new_span_changes_them(
    scene: dict[str, Any], computed: dict[str, int], kind: str
) -> None:
    url, fresh = API[kind]
    client = login(scene["admin"])
    first = client.get(url)
    second = client.get(url)
    assert first.status_code == second.status_code == 200
    assert first.json() == second.json() == as_json(fresh(scene["project"]))
    assert computed == {kind: 1}  # the second request read the kept figures

    span(scene["t"][3], scene["alice"], ["Unwanted"])  # t3 (model-a) was C C, now U C
    third = client.get(url)
    assert computed == {kind: 2}
    assert third.json() != first.json() and third.json() == as_json(fresh(scene["project"]))


def edit_span(scene: dict[str, Any]) -> None:
    row = SpanAnnotation.objects.get(sample=scene["t"][2], annotator=scene["alice"])  # t2 Q Q
    row.labels = ["Unwanted"]
    row.save()


def delete_span(scene: dict[str, Any]) -> None:
    SpanAnnotation.objects.filter(sample=scene["t"][0], annotator=scene["bob"]).delete()  # t0 U U -> U C


def reopen(scene: dict[str, Any]) -> None:
    mine = Assignment.objects.get(batch=scene["batch1"], annotator=scene["dora"])
    freeze.reopen_round(mine, scene["admin"], "a fix")  # dora's spans leave the figures: s2 C C U becomes C C


def judge_samples(scene: dict[str, Any]) -> None:
    judge = Judge.objects.create(project=scene["project"], name="nli", kind=Judge.Kind.NLI, nli_model_path="/x")
    run = JudgeRun.objects.create(project=scene["project"], judge=judge, status=JudgeRun.Status.DONE)
    for sample in scene["t"]:
        Judgement.objects.create(run=run, sample=sample, status="ok", probability=0.3)


def exclude_from_agreement(scene: dict[str, Any]) -> None:
    Assignment.objects.filter(batch=scene["batch1"], annotator=scene["alice"]).update(excluded_from_agreement=True)


@pytest.mark.parametrize(
    ("write", "kind"),
    [
        (edit_span, "api-halu-rates"),
        (delete_span, "api-agreement"),
        (reopen, "api-halu-rates"),
        (exclude_from_agreement, "api-agreement"),
        (judge_samples, "api-detector-eval"),
    ],
)
def test_every_write_the_api_figures_rest_on_changes_what_is_served(
    scene: dict[str, Any], computed: dict[str, int], write: Callable[[dict[str, Any]], None], kind: str
) -> None:
    url, fresh = API[kind]
    client = login(scene["admin"])
    before = client.get(url).json()
    write(scene)
    after = client.get(url).json()
    assert computed == {kind: 2}
    assert after != before and after == as_json(fresh(scene["project"]))


# --------------------------------------------------------------------------- the curation list


def listed(html: str) -> list[str]:
    return re.findall(r'<tr data-sample="(\d+)"', html)


def test_the_curation_list_is_worked_out_once_for_all_its_pages(
    scene: dict[str, Any], computed: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(curation, "ROWS_PER_PAGE", 3)
    client = login(scene["admin"])
    first = client.get("/projects/demo/curation/?round=1&page=1").content.decode()
    second = client.get("/projects/demo/curation/?round=1&page=2").content.decode()
    third = client.get("/projects/demo/curation/?round=1&page=3").content.decode()
    assert computed == {"curation": 1}  # pages 2 and 3 read the kept list
    pages = listed(first) + listed(second) + listed(third)
    rows, _ = curation._rows(scene["project"], 1)  # the list worked out afresh, in its order
    assert pages == [str(row["sample_id"]) for row in rows] and len(pages) == 7
    assert "7 samples with submitted work in round 1, 4 disputed; showing 4–6." in second


def add_gold(scene: dict[str, Any]) -> None:
    GoldLabel.objects.create(sample=scene["s"][0], category="U", decided_by=scene["admin"])


def stale_gold(scene: dict[str, Any]) -> None:
    add_gold(scene)
    span(scene["s"][0], scene["bob"], ["Benign"], 12, 16)  # written after the gold label: it is stale


def submit_again(scene: dict[str, Any]) -> str:
    reopen(scene)
    for sample in scene["s"]:  # the done marks a second submission needs
        SampleReview.objects.update_or_create(sample=sample, annotator=scene["dora"], round=1,
                                              defaults={"done": True})
    # The list is kept as of the re-opening: submitting again must change it back.
    reopened = login(scene["admin"]).get("/projects/demo/curation/?round=1").content.decode()
    freeze.submit_round_again(scene["batch1"], scene["dora"], round=1)
    return reopened


@pytest.mark.parametrize("write", [add_gold, stale_gold, reopen, submit_again, delete_span])
def test_every_write_the_curation_list_rests_on_changes_what_it_shows(
    scene: dict[str, Any], computed: dict[str, int], write: Callable[[dict[str, Any]], str | None]
) -> None:
    client = login(scene["admin"])
    before = client.get("/projects/demo/curation/?round=1").content.decode()
    before = write(scene) or before
    after = client.get("/projects/demo/curation/?round=1").content.decode()
    rows, stale = curation._rows(scene["project"], 1)
    assert computed["curation"] >= 2
    assert after != before
    listing = curation.curation_list(scene["project"], 1)
    assert [row["sample_id"] for row in listing.page] == [row["sample_id"] for row in rows]
    assert [dict(row, position=list(row["position"])) for row in rows] == listing.page.object_list
    assert listing.stale_count == len(stale)
