"""The figure store behind the agreement and results pages: stale figures are shown while one refresh
runs in the worker. The scene is in results_scene.py."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache

from annotate import agreement
from annotate.models import Assignment, FigureSet
from annotate.services import agreement_admin, results_cache, stats
from tests.annotate.results_scene import HTMX, alpha_of, run_json, same, span, tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


# --------------------------------------------------------------------------- the figure store: stale while it refreshes


@pytest.fixture
def expensive(settings: Any) -> Any:
    """Treat every figure set as expensive, as at 100,000 samples: stale figures are served, not recomputed."""
    settings.FIGURES_SYNC_MS = 0
    return settings


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The refresh tasks queued (their figure set ids), instead of a broker."""
    from annotate import tasks

    calls: list[int] = []
    monkeypatch.setattr(tasks.refresh_figures, "delay", lambda figure_set_id: calls.append(figure_set_id))
    return calls


def model_a_u_rate(response: Any) -> float:
    page = tags(response)
    generators = [row["data-generator"] for row in page.find("tr") if "data-generator" in row]
    rates = [float(cell["data-rate"]) for cell in page.find("td", data_column="U") if "data-rate" in cell]
    return dict(zip(generators, rates, strict=True))["model-a"]


def test_first_view_computes_the_figures_and_keeps_them_for_every_process(
    scene: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = login(scene["admin"])
    first = client.get("/projects/demo/results/")
    assert 'data-role="stale-note"' not in first.content.decode()
    kept = FigureSet.objects.get(project=scene["project"], kind="results")
    assert kept.version == results_cache.data_version(scene["project"])
    assert json.loads(kept.value)["rates"] == stats.project_halu_rates(scene["project"], 1)
    # Another process has an empty local cache but the same table: it serves the kept figures without computing.
    cache.clear()
    monkeypatch.setitem(results_cache.FIGURE_SETS, "results", lambda *args, **kwargs: pytest.fail("recomputed"))
    again = client.get("/projects/demo/results/")
    assert again.status_code == 200 and model_a_u_rate(again) == model_a_u_rate(first)


def test_stale_figures_are_shown_at_once_with_their_age_and_one_refresh_is_queued(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    client = login(scene["admin"])
    before = model_a_u_rate(client.get("/projects/demo/results/"))
    span(scene["t"][3], scene["alice"], ["Unwanted"])  # model-a's t3 becomes U: fresh rate 100
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get("/projects/demo/results/")
        again = client.get("/projects/demo/results/")  # a second viewer while the refresh is pending
    html = stale.content.decode()
    assert stale.status_code == 200 and model_a_u_rate(stale) == before != 100.0
    note = tags(stale).one("p", data_role="stale-note")
    assert note["data-computed-at"]
    assert re.search(r"Computed \d+ seconds? ago — refreshing", html)
    assert 'data-role="stale-poll"' in html
    kept = FigureSet.objects.get(project=scene["project"], kind="results")
    assert queued == [kept.pk]  # queued once, not once per view
    assert kept.refresh_queued_at is not None
    assert model_a_u_rate(again) == before
    # The API and the commands never wait for the refresh: they are fresh already.
    assert client.get("/api/projects/demo/halu-rates/").json()["model-a"]["U"] == 100.0
    assert run_json("halu_rates")["model-a"]["U"] == 100.0


def test_the_refresh_task_recomputes_and_the_page_shows_fresh_figures(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get("/projects/demo/results/")
    shown = FigureSet.objects.get(kind="results").version
    poll = tags(stale).one("span", data_role="stale-poll")["hx-get"].replace("&amp;", "&")
    assert f"shown={shown}" in poll
    assert client.get(poll, **HTMX).status_code == 204  # nothing newer yet: htmx keeps the page as it is
    refresh_figures(queued[0])  # what the worker runs
    kept = FigureSet.objects.get(kind="results")
    assert kept.version == results_cache.data_version(scene["project"]) != shown
    assert kept.refresh_queued_at is None
    assert json.loads(kept.value) == stats.results_figures(scene["project"], 1, 0.5, 7)
    swapped = client.get(poll, **HTMX)
    assert swapped.status_code == 200 and swapped.content.decode().lstrip().startswith('<div id="results-figures">')
    assert model_a_u_rate(swapped) == 100.0 and 'data-role="stale-note"' not in swapped.content.decode()
    refresh_figures(queued[0])  # idempotent: a second delivery finds the figures current
    assert FigureSet.objects.get(kind="results").computed_at == kept.computed_at


def test_a_poll_answered_with_figures_that_are_stale_again_does_not_poll_again(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        poll = tags(client.get("/projects/demo/results/")).one("span", data_role="stale-poll")["hx-get"]
    refresh_figures(queued[0])
    span(scene["t"][1], scene["alice"], ["Unwanted"])  # the campaign goes on
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.get(poll.replace("&amp;", "&"), **HTMX).content.decode()
    assert 'data-role="stale-note"' in answer and 'data-role="stale-poll"' not in answer
    assert "Reload the page" in answer


def test_a_refresh_lock_that_ran_out_is_taken_again(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        client.get("/projects/demo/results/")
    kept = FigureSet.objects.get(kind="results")
    FigureSet.objects.filter(pk=kept.pk).update(
        refresh_queued_at=kept.refresh_queued_at - timedelta(seconds=expensive.FIGURES_REFRESH_LOCK_SECONDS + 1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        client.get("/projects/demo/results/")
    assert queued == [kept.pk, kept.pk]


def test_a_broker_that_is_down_leaves_the_stale_figures_and_releases_the_lock(
    scene: dict[str, Any], expensive: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    from annotate import tasks

    def down(figure_set_id: int) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.refresh_figures, "delay", down)
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get("/projects/demo/results/")
    assert response.status_code == 200 and 'data-role="stale-note"' in response.content.decode()
    assert FigureSet.objects.get(kind="results").refresh_queued_at is None


def test_agreement_page_and_span_section_serve_stale_figures_until_refreshed(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    url = "/projects/demo/agreement/?scheme=C|B|Q|U&level=nominal"
    spans_url = url + "&section=spans"

    def cell(response: Any) -> float | None:
        return alpha_of(tags(response).one("td", data_scheme="C|B|Q|U", data_level="nominal", data_round="1"))

    before = cell(client.get(url))
    client.get(spans_url, **HTMX)
    dora = Assignment.objects.get(batch=scene["batch1"], annotator=scene["dora"])
    agreement_admin.set_agreement_exclusion(dora, True)
    expected = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "pooled", 1)["alpha"]
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get(url)
        stale_spans = client.get(spans_url, **HTMX)
    assert same(cell(stale), before) and not same(cell(stale), expected)
    assert 'data-role="stale-note"' in stale.content.decode()
    assert 'data-role="stale-note"' in stale_spans.content.decode()
    assert 'hx-target="#span-agreement"' in stale_spans.content.decode()
    assert sorted(queued) == sorted(FigureSet.objects.filter(project=scene["project"]).values_list("pk", flat=True))
    for figure_set_id in queued:
        refresh_figures(figure_set_id)
    fresh = client.get(url)
    assert same(cell(fresh), expected) and 'data-role="stale-note"' not in fresh.content.decode()
    token = agreement.token_alpha(stats.batch_spans(scene["project"], 1), "C|B|Q|U").alpha
    assert same(alpha_of(tags(client.get(spans_url, **HTMX)).one("tr", data_role="token-alpha")), token)


def test_cheap_figures_are_recomputed_in_the_request_instead_of_shown_stale(
    scene: dict[str, Any], queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get("/projects/demo/results/")
    assert model_a_u_rate(response) == 100.0 and 'data-role="stale-note"' not in response.content.decode()
    assert queued == []


def test_a_refresh_for_a_round_that_is_gone_drops_the_figures(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    for user in (scene["alice"], scene["bob"]):
        Assignment.objects.create(batch=scene["batch1"], annotator=user, round=2, status=Assignment.Status.SUBMITTED)
    client.get("/projects/demo/results/?round=2")
    Assignment.objects.filter(round=2).delete()
    kept = FigureSet.objects.get(kind="results", query__round=2)
    refresh_figures(kept.pk)
    assert not FigureSet.objects.filter(pk=kept.pk).exists()
    assert client.get("/projects/demo/results/?round=2").status_code == 400  # the page says the round is unknown


def test_each_project_keeps_only_its_most_recent_page_queries(scene: dict[str, Any], settings: Any) -> None:
    settings.FIGURES_KEPT_PER_PROJECT = 2
    client = login(scene["admin"])
    for k in (1, 2, 3):
        client.get(f"/projects/demo/results/?k={k}")
    assert sorted(query["k"] for query in FigureSet.objects.values_list("query", flat=True)) == [2, 3]


def test_disputes_page_and_batch_creation_use_fresh_numbers(scene: dict[str, Any], expensive: Any) -> None:
    client = login(scene["admin"])
    url = f"/projects/demo/disputes/?batch={scene['batch2'].pk}&round=1"
    client.get(url)
    span(scene["t"][3], scene["alice"], ["Unwanted"])  # t3: alice U, bob C: a new dispute
    page = tags(client.get(url))
    assert str(scene["t"][3].pk) in [row["data-sample"] for row in page.find("tr") if "data-sample" in row]
    assert not FigureSet.objects.exists()
