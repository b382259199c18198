"""Pairs pages follow a background job that ends in place, and round 1 shows no filter it never applied.

Before: after "Compute span vectors" the wizard kept saying items had no vector, with a funnel "Pool 0", until a
reload; the perturbation section kept offering "Perturb 6 originals" after the job, then "Perturb 0 originals"
with "import raw texts first"; round 1's header listed a P(H) band and filters, and its wizard asked for them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Job, PairItem, PairOriginal, PairRound, Project
from annotate.services.pairs import config, rounds
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import HTMX, OPEN, PAGE, WIZARD, funnel, text_of

pytestmark = pytest.mark.django_db

VECTORS = {**HTMX, "HTTP_HX_TARGET": "span-vectors"}
STATUS = {**HTMX, "HTTP_HX_TARGET": "pair-status"}
PERTURBATION = {**HTMX, "HTTP_HX_TARGET": "perturbation"}


def events(response: Any) -> set[str]:
    """The client events an htmx answer triggers (HX-Trigger holds a JSON object, or nothing)."""
    header = response.headers.get("HX-Trigger")
    return set(json.loads(header)) if header else set()


def drop_vectors(project: Project, count: int) -> dict[int, bytes]:
    """Take the span vector off ``count`` pool items, as a changed encoder would; returns them to put back."""
    items = list(PairItem.objects.filter(project=project, state=PairItem.State.POOL).order_by("pk")[:count])
    kept = {item.pk: bytes(item.vector) for item in items}
    PairItem.objects.filter(pk__in=kept).update(vector=None)
    return kept


def put_vectors_back(kept: dict[int, bytes]) -> None:
    for pk, vector in kept.items():
        PairItem.objects.filter(pk=pk).update(vector=vector)


# --- 1. the wizard after the span vectors are computed ----------------------------------------------------------


def test_the_funnel_keeps_the_pool_size_while_span_vectors_are_missing(detector_project: Project,
                                                                       admin_user: Any) -> None:
    kept = drop_vectors(detector_project, 5)
    client = login(admin_user)
    html = client.get(WIZARD, OPEN, **HTMX).content.decode()
    assert funnel(html) == {"pool": 30}  # the whole pool, not only the 25 items that have a vector
    pool_row = text_of(html, r'(<tr data-step="pool">.*?</tr>)')
    assert "Scoring them waits for the span vectors: 5 items (pool and labelled) have none" in pool_row
    assert "5 of the 30 pool items" in text_of(html, r'data-role="refusal"><p>(.*?)</p>')

    put_vectors_back(kept)
    ready = client.get(WIZARD, OPEN, **HTMX).content.decode()
    assert 'data-role="refusal"' not in ready
    assert funnel(ready)["pool"] == 30 and funnel(ready)["band"] == 30


def test_the_span_vector_section_polls_while_its_job_runs_and_says_when_it_ends(detector_project: Project,
                                                                                 admin_user: Any,
                                                                                 alice: Any) -> None:
    kept = drop_vectors(detector_project, 5)
    job = Job.objects.create(project=detector_project, kind=Job.Kind.PAIR_VECTORS, total=5,
                             status=Job.Status.RUNNING)
    client = login(admin_user)
    page = client.get(WIZARD, OPEN).content.decode()
    section = text_of(page, r'(<section class="card" id="span-vectors"[^>]*>)')
    assert 'hx-trigger="every 2s"' in section and 'hx-disinherit="hx-target hx-select hx-swap"' in section
    form = text_of(page, r'(<form[^>]*data-role="round-form"[^>]*>)')
    assert "span-vectors-finished from:body" in form  # the preview asks again, with the fields as they are
    assert 'data-role="compute-vectors"' not in page  # no second job while one runs

    running = client.get(WIZARD, **VECTORS)
    fragment = running.content.decode()
    assert running.status_code == 200 and "<html" not in fragment and 'id="round-preview"' not in fragment
    assert text_of(fragment, r'data-role="stale-vectors">(\d+) items') == "5"
    assert events(running) == set()

    put_vectors_back(kept)
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=5, finished_at=timezone.now())
    finished = client.get(WIZARD, **VECTORS)
    fragment = finished.content.decode()
    assert events(finished) == {"span-vectors-finished"}
    assert 'hx-trigger="every 2s"' not in fragment and 'data-role="stale-vectors"' not in fragment
    assert 'data-role="vectors-ready"' in fragment and 'data-job-status="done"' in fragment
    assert login(alice).get(WIZARD, **VECTORS).status_code == 403


# --- 2. the perturbation section after the job ------------------------------------------------------------------


@pytest.fixture
def models_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """The page offers the perturbation only with its models set up; these tests are about what follows."""
    monkeypatch.setattr(config, "missing_model_settings", lambda project: [])


def add_originals(project: Project, count: int) -> list[PairOriginal]:
    return [PairOriginal.objects.create(project=project, external_id=f"raw-{index}", text="A raw text.")
            for index in range(count)]


def test_the_perturbation_section_refreshes_when_the_status_poll_sees_the_job_end(
    pairs_project: Project, admin_user: Any, models_ready: None
) -> None:
    originals = add_originals(pairs_project, 6)
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, total=6, status=Job.Status.RUNNING)
    client = login(admin_user)
    page = client.get(PAGE).content.decode()
    section = text_of(page, r'(<section class="card" id="perturbation"[^>]*>)')
    assert 'hx-trigger="pair-jobs-finished from:body"' in section and 'hx-target="this"' in section
    assert 'data-role="perturbation-running"' in page and 'data-role="start-perturbation"' not in page
    assert events(client.get(PAGE, **STATUS)) == set()  # still running: nothing to refresh yet

    PairOriginal.objects.filter(pk__in=[original.pk for original in originals]).update(perturbed_at=timezone.now())
    Job.objects.filter(pk=job.pk).update(status=Job.Status.DONE, done=6, finished_at=timezone.now())
    assert events(client.get(PAGE, **STATUS)) == {"pair-jobs-finished"}
    fragment = client.get(PAGE, **PERTURBATION).content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="perturbation"')
    assert "<html" not in fragment and 'id="pair-status"' not in fragment
    assert text_of(fragment, r'data-role="nothing-to-perturb">(.*?)</p>').split() == (
        "All 6 originals are perturbed. Import more raw texts to perturb more.".split())
    assert 'data-role="start-perturbation"' not in fragment and "import raw texts first" not in fragment


def test_the_perturbation_button_counts_what_waits_and_is_gone_when_nothing_does(
    pairs_project: Project, admin_user: Any, alice: Any, models_ready: None
) -> None:
    client = login(admin_user)
    empty = client.get(PAGE, **PERTURBATION).content.decode()
    assert "No original text yet" in empty and 'data-role="start-perturbation"' not in empty
    add_originals(pairs_project, 2)
    waiting = client.get(PAGE, **PERTURBATION).content.decode()
    button = text_of(waiting, r'(<button[^>]*data-role="start-perturbation"[^>]*>[^<]*</button>)')
    assert "Perturb 2 originals" in button and "disabled" not in button
    # Annotators have no perturbation section: asking for it gets their own page, without it.
    assert 'id="perturbation"' not in login(alice).get(PAGE, **PERTURBATION).content.decode()


# --- 3. round 1 is drawn at random ------------------------------------------------------------------------------


def test_round_one_says_it_was_drawn_at_random_and_lists_no_filters(pairs_project: Project,
                                                                    admin_user: Any) -> None:
    make_pair_items(pairs_project, 6, round_number=None)
    first = rounds.create_round(pairs_project, admin_user, size=4, low=0.2, high=0.8, seed=2)
    assert first.filters == {}  # nothing was filtered, so nothing is stored as if it had been
    html = login(admin_user).get("/projects/pairs/pairs/rounds/1/").content.decode()
    assert text_of(html, r'data-role="round-filters">(.*?)</span>') == "drawn at random (no detector yet)"
    assert "P(H) in" not in text_of(html, r'data-role="round-summary">(.*?)</p>')
    # A round 1 stored before with the wizard's thresholds still shows none of them.
    PairRound.objects.filter(pk=first.pk).update(
        filters={"low": 0.1, "high": 0.9, "paraphrase_max": 0.9, "drop_fraction": 1.0})
    html = login(admin_user).get("/projects/pairs/pairs/rounds/1/").content.decode()
    assert text_of(html, r'data-role="round-filters">(.*?)</span>') == "drawn at random (no detector yet)"


def test_a_detector_round_lists_its_filters(detector_project: Project, admin_user: Any) -> None:
    rounds.create_round(detector_project, admin_user, size=4, low=0.1, high=0.9, paraphrase_max=0.95,
                        drop_fraction=0.5, seed=3)
    html = login(admin_user).get("/projects/pairs/pairs/rounds/2/").content.decode()
    assert text_of(html, r'data-role="round-filters">(.*?)</span>') == (
        "filters: P(H) in [0.1, 0.9], paraphrase above 0.95, date/name swaps dropped: 0.5")


def test_the_wizard_asks_round_one_for_no_filter(pairs_project: Project, admin_user: Any) -> None:
    make_pair_items(pairs_project, 6, round_number=None)
    client = login(admin_user)
    # A threshold left in the URL (a link from a later round) is not read: round 1 has no such field.
    response = client.get(WIZARD, {"size": "3", "seed": "4", "low": "2", "high": "x"})
    html = response.content.decode()
    assert response.status_code == 200 and 'data-role="form-errors"' not in html
    assert "drawn at random (no detector yet)" in text_of(html, r'data-role="random-draw">(.*?)</p>')
    for name in ("low", "high", "paraphrase_max", "drop_fraction"):
        assert f'name="{name}"' not in html, name
    assert funnel(html) == {"pool": 6, "selected": 3}

    job = rounds.start_round_job(pairs_project, admin_user, size=3, seed=4)
    waiting = client.get(f"/projects/pairs/pairs/rounds/jobs/{job.pk}/").content.decode()
    assert text_of(waiting, r'data-role="job-parameters">(.*?)</p>') == (
        "Size 3, drawn at random (no detector yet), seed 4.")


def test_the_wizard_asks_later_rounds_for_every_filter(detector_project: Project, admin_user: Any) -> None:
    html = login(admin_user).get(WIZARD, OPEN).content.decode()
    assert 'data-role="random-draw"' not in html
    for name in ("low", "high", "paraphrase_max", "drop_fraction"):
        assert f'name="{name}"' in html, name
