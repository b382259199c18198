"""The round wizard (preview, funnel, subsampling ratio, round jobs) and the round page of a pairs project."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.models import Job, PairItem, PairRound, Project
from annotate.pairmath.subsampling import subsampling_ratio
from annotate.services.pairs import rounds
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_rounds import add_items, add_noisy_round_one, add_training
from tests.pairs.page_helpers import HTMX, OPEN, WIZARD, funnel, text_of

pytestmark = pytest.mark.django_db


# --- the round wizard -------------------------------------------------------------------------------------------


def test_the_wizard_previews_round_one_at_random(pairs_project: Project, admin_user: Any) -> None:
    make_pair_items(pairs_project, 12, round_number=None)
    response = login(admin_user).get(WIZARD, {**OPEN, "size": "5"})
    assert response.status_code == 200
    html = response.content.decode()
    assert "Start round 1" in html and funnel(html) == {"pool": 12, "selected": 5}
    assert "round 1 draws at random" in html
    assert html.count('data-role="preview-items"') == 1 and html.count("Drawn at random from the pool") == 5


def test_a_first_visit_fixes_a_seed_so_the_round_draws_what_was_previewed(pairs_project: Project,
                                                                           admin_user: Any) -> None:
    make_pair_items(pairs_project, 12, round_number=None)
    html = login(admin_user).get(WIZARD).content.decode()
    seed = text_of(html, r'name="seed" min="0" value="(\d+)"')
    assert text_of(html, r'name="size" min="1" value="(\d+)"') == str(rounds.DEFAULT_SIZE)
    assert f"seed {seed}" in html  # the preview used the seed the form now holds


def test_the_htmx_preview_is_the_fragment_and_follows_the_thresholds(detector_project: Project,
                                                                       admin_user: Any) -> None:
    client = login(admin_user)
    wide = client.get(WIZARD, OPEN, **HTMX).content.decode()
    assert "<html" not in wide and 'id="round-preview"' in wide and 'data-role="round-form"' not in wide
    assert {k: v for k, v in funnel(wide).items() if k != "subsampling" and k != "selected"} == {
        "pool": 30, "band": 30, "paraphrase": 30, "date_name": 30}
    narrow = funnel(client.get(WIZARD, {**OPEN, "low": "0.1", "high": "0.9"}, **HTMX).content.decode())
    assert (narrow["pool"], narrow["band"], narrow["paraphrase"], narrow["date_name"]) == (30, 20, 20, 20)
    filtered = funnel(client.get(WIZARD, {**OPEN, "low": "0.1", "high": "0.9", "paraphrase_max": "0.9",
                                          "drop_fraction": "1"}, **HTMX).content.decode())
    assert (filtered["band"], filtered["paraphrase"], filtered["date_name"]) == (20, 16, 12)
    half = funnel(client.get(WIZARD, {**OPEN, "low": "0.1", "high": "0.9", "paraphrase_max": "0.9",
                                      "drop_fraction": "0.5"}, **HTMX).content.decode())
    assert half["date_name"] == 14
    assert filtered["selected"] <= filtered["subsampling"] <= 12


def test_the_wizard_explains_the_subsampling_ratio(detector_project: Project, admin_user: Any) -> None:
    html = login(admin_user).get(WIZARD, {**OPEN, "low": "0.1", "high": "0.9"}).content.decode()
    plan = rounds.preview_round(detector_project, size=100, low=0.1, high=0.9, paraphrase_max=1.0,
                                drop_fraction=0.0, seed=5)
    ratio = plan.ratio
    assert ratio is not None
    panel = text_of(html, r'(<div data-role="ratio">.*?</div>)')
    for name in ("tp", "fp", "tn", "fn"):
        assert text_of(panel, rf'data-count="{name}">(\d+)<') == str(getattr(ratio, name))
    cross_validation = plan.cross_validation
    assert cross_validation is not None
    # Cross-validated over the 40 labelled items, each counted once per fold split.
    assert ratio.tp + ratio.fp + ratio.tn + ratio.fn == 40 * cross_validation["repeats"]
    assert text_of(panel, r'data-figure="alpha">([^<]+)<') == f"{ratio.tp / (ratio.tp + ratio.fn):.4f}"
    assert text_of(panel, r'data-figure="gamma">([^<]+)<') == (
        f"{ratio.tp / (ratio.tp + ratio.fp):.4f}" if ratio.tp + ratio.fp else "—")
    if ratio.r is not None and ratio.tp != ratio.fp:
        # R is the formula's value, but 0 where both predicted groups are H-majority (keep_no_h, DESIGN.md).
        formula = (ratio.tn - ratio.fn) / (ratio.tp - ratio.fp)
        shown = 0.0 if ratio.action == "keep_no_h" else formula
        assert text_of(panel, r'data-figure="R">([^<]+)<') == f"{shown:.4f}"
    assert f'data-action="{ratio.action}"' in panel and "Where the counts come from" in panel
    # The panel says the counts are cross-validated with the round's seed, and that they vary with it.
    assert "split at random into 5 folds with the round&#x27;s seed (5)" in panel
    assert f"summed over {cross_validation['repeats']} fold splits" in panel
    assert "they vary with the seed" in panel
    low = cross_validation["r_low"]
    if low is not None:
        assert text_of(panel, r'data-figure="split-r-low">([^<]+)<') == f"{low:.4f}"


@pytest.mark.parametrize("separation", [1.0, 0.6])
def test_the_ratio_panel_says_how_far_r_moves_with_the_fold_split(pairs_project: Project, admin_user: Any,
                                                                   separation: float) -> None:
    # 1.0: a fair detector, whose splits agree; 0.6: one close to chance, whose splits do not.
    add_noisy_round_one(pairs_project, separation=separation, data_seed=4 if separation < 1 else 5)
    html = login(admin_user).get(WIZARD, {**OPEN, "low": "0", "high": "1", "seed": "7"}).content.decode()
    plan = rounds.preview_round(pairs_project, size=100, low=0.0, high=1.0, seed=7)
    cross_validation = plan.cross_validation
    assert cross_validation is not None
    panel = text_of(html, r'(<div data-role="ratio">.*?</div>)')
    assert "round&#x27;s seed (7)" in panel and "they vary with the seed" in panel
    defined = [r for r in cross_validation["r_per_split"] if r is not None]
    if defined:
        assert text_of(panel, r'data-figure="split-r-low">([^<]+)<') == f"{min(defined):.4f}"
    # Which predicted class each split alone would thin out.
    thinned = set()
    for split in cross_validation["per_split"]:
        ratio = subsampling_ratio(*split)
        thinned.add("H" if ratio.keep_predicted_h < 1 else "N" if ratio.keep_predicted_n < 1 else "neither")
    assert cross_validation["agree"] is (len(thinned) == 1)
    assert ('data-role="splits-disagree"' in panel) is (len(thinned) > 1)
    assert ("every split thins out the same predicted class" in panel) is (len(thinned) == 1)
    assert (len(thinned) == 1) is (separation == 1.0)  # the built cases do what they are built for


def test_too_few_labelled_items_is_refused_with_the_numbers(pairs_project: Project, admin_user: Any) -> None:
    first = PairRound.objects.create(project=pairs_project, number=1, size=5, seed=1)
    add_training(pairs_project, {-1: (2, 1), 1: (1, 1)}, pair_round=first)
    add_items(pairs_project, [0.0] * 4)
    html = login(admin_user).get(WIZARD, OPEN, **HTMX).content.decode()
    refusal = text_of(html, r'data-role="refusal"><p>(.*?)</p>')
    assert "5 consensus or imported-label items (3 H, 2 N)" in refusal and "at least 20" in refusal
    response = login(admin_user).post(WIZARD, OPEN)
    assert response.status_code == 400 and "at least 20" in response.content.decode()
    assert PairRound.objects.filter(project=pairs_project).count() == 1
    assert not Job.objects.filter(kind=Job.Kind.PAIR_ROUND).exists()


def test_bad_wizard_fields_are_named_and_nothing_starts(pairs_project: Project, admin_user: Any) -> None:
    PairRound.objects.create(project=pairs_project, number=1, size=3, seed=1)  # round 2 has the filter fields
    make_pair_items(pairs_project, 3, round_number=None)
    html = login(admin_user).get(WIZARD, {**OPEN, "size": "0", "low": "0.8", "high": "0.2", "seed": "x"},
                                 **HTMX).content.decode()
    assert "Items to draw: 0 is below 1" in html and "Highest P(H) kept: 0.2 is below the lowest P(H) kept (0.8)" in html
    assert "Seed: &#x27;x&#x27; is not a whole number" in html
    assert 'data-role="funnel"' not in html
    response = login(admin_user).post(WIZARD, {**OPEN, "drop_fraction": "2"})
    assert response.status_code == 400 and "Share of date/name swaps dropped: 2 is not between 0 and 1" in response.content.decode()
    assert not Job.objects.exists() and PairRound.objects.count() == 1


def test_creating_a_round_runs_a_job_and_lands_on_the_round_page(detector_project: Project, admin_user: Any) -> None:
    client = login(admin_user)
    fields = {**OPEN, "low": "0.1", "high": "0.9", "size": "6"}
    preview = rounds.preview_round(detector_project, size=6, low=0.1, high=0.9, paraphrase_max=1.0,
                                   drop_fraction=0.0, seed=5)
    response = client.post(WIZARD, fields)
    job = Job.objects.get(project=detector_project, kind=Job.Kind.PAIR_ROUND)
    assert response.status_code == 302 and response["Location"] == f"/projects/pairs/pairs/rounds/jobs/{job.pk}/"
    assert job.options["seed"] == 5 and job.options["size"] == 6
    waiting = client.get(response["Location"]).content.decode()
    assert 'data-job-status="queued"' in waiting and 'hx-trigger="every 1s"' in waiting

    rounds.run_round_job(job.pk)  # what the worker does
    assert client.get(response["Location"])["Location"] == "/projects/pairs/pairs/rounds/2/"
    assert client.get(response["Location"], **HTMX)["HX-Redirect"] == "/projects/pairs/pairs/rounds/2/"
    html = client.get("/projects/pairs/pairs/rounds/2/").content.decode()
    drawn = [int(pk) for pk in re.findall(r'<tr data-item="(\d+)" data-state="open">', html)]
    assert drawn == [item_id for item_id, _ in preview.selected] and len(drawn) == 6
    reasons = re.findall(r'data-role="why-chosen">([^<]+)<', html)
    assert len(reasons) == 6 and all(reason.startswith("Chosen by the detector: P(H) = ") for reason in reasons)
    assert all("passed the P(H) band, the paraphrase filter" in reason for reason in reasons)


def test_a_round_job_that_is_refused_says_why_and_links_back(pairs_project: Project, admin_user: Any) -> None:
    job = rounds.start_round_job(pairs_project, admin_user, size=3, low=0.2, high=0.8, paraphrase_max=0.9,
                                 drop_fraction=1.0, seed=9)
    rounds.run_round_job(job.pk)  # the pool is empty
    html = login(admin_user).get(f"/projects/pairs/pairs/rounds/jobs/{job.pk}/").content.decode()
    assert "No round was drawn: The pool is empty" in html
    assert text_of(html, r'href="([^"]+)" data-role="back-to-wizard"').replace("&amp;", "&") == (
        "/projects/pairs/pairs/rounds/new/?size=3&low=0.2&high=0.8&paraphrase_max=0.9&drop_fraction=1.0&seed=9")


def test_the_wizard_is_for_admins(pairs_project: Project, alice: Any, charlie: Any, admin_user: Any) -> None:
    assert login(alice).get(WIZARD).status_code == 403
    assert login(alice).post(WIZARD, OPEN).status_code == 403
    assert login(charlie).get(WIZARD).status_code == 404
    assert login(admin_user).put(WIZARD).status_code == 405
    assert login(alice).get("/projects/pairs/pairs/rounds/jobs/1/").status_code == 403


def test_missing_span_vectors_are_offered_as_a_job(pairs_project: Project, admin_user: Any) -> None:
    PairRound.objects.create(project=pairs_project, number=1, size=2, seed=1)
    make_pair_items(pairs_project, 2, round_number=None)
    html = login(admin_user).get(WIZARD, OPEN).content.decode()
    assert text_of(html, r'data-role="stale-vectors">(\d+) items') == "2"
    response = login(admin_user).post("/projects/pairs/pairs/vectors/")
    assert response.status_code == 302
    job = Job.objects.get(kind=Job.Kind.PAIR_VECTORS)
    assert job.total == 2
    assert f'id="job-{job.pk}"' in login(admin_user).get(WIZARD, OPEN).content.decode()



def test_a_queued_vector_job_is_not_shown_once_every_item_has_its_vector(pairs_project: Project, admin_user: Any,
                                                                         settings: Any) -> None:
    # Before: the wizard showed "0 / 2 · Queued" (no worker had run) beside "Every item has its span vector".
    PairRound.objects.create(project=pairs_project, number=1, size=2, seed=1)
    items = make_pair_items(pairs_project, 2, round_number=None)
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_VECTORS, total=2)
    assert f'id="job-{job.pk}"' in login(admin_user).get(WIZARD, OPEN).content.decode()  # 2 missing: shown
    PairItem.objects.filter(pk__in=[item.pk for item in items]).update(
        vector=b"\x00\x00", vector_model=settings.PAIRS_ENCODER
    )
    html = login(admin_user).get(WIZARD, OPEN).content.decode()
    assert 'data-role="stale-vectors"' not in html
    assert f'id="job-{job.pk}"' not in html and 'hx-trigger="every 2s"' not in html

# --- the round page ---------------------------------------------------------------------------------------------


def test_round_one_page_lists_items_with_why_and_says_why_metrics_are_missing(pairs_project: Project,
                                                                               admin_user: Any, alice: Any,
                                                                               bob: Any) -> None:
    make_pair_items(pairs_project, 6, round_number=None)
    pair_round = rounds.create_round(pairs_project, admin_user, size=4, low=0.1, high=0.9, seed=2)
    html = login(admin_user).get("/projects/pairs/pairs/rounds/1/").content.decode()
    assert len(re.findall(r'<tr data-item="\d+" data-state="open">', html)) == 4
    assert html.count("Drawn at random from the pool (each pool item had a chance of 0.667)") == 4
    assert "round 1 is drawn at random" in html
    assert text_of(html, r'data-metric="auc"><th>[^<]+</th>\s*<td>([^<]+)<') == "—"
    assert "nothing promised" in text_of(html, r'data-figure="promised">(.*?)</dd>')
    assert "no item of this round has reached consensus yet" in html
    assert f"seed {pair_round.seed}" in html
    assert login(alice).get("/projects/pairs/pairs/rounds/1/").status_code == 403
    assert login(admin_user).post("/projects/pairs/pairs/rounds/1/").status_code == 405
    assert login(admin_user).get("/projects/pairs/pairs/rounds/7/").status_code == 404


def test_a_detector_round_shows_its_metrics_and_the_balance_reached(detector_project: Project,
                                                                    admin_user: Any) -> None:
    pair_round = rounds.create_round(detector_project, admin_user, size=8, low=0.1, high=0.9, paraphrase_max=1.0,
                                     drop_fraction=0.0, seed=3)
    drawn = list(pair_round.items.order_by("pk"))
    # Judges agree: the items at t = 1 are H, at t = -1 N (the head predicts them so: all right).
    for item in drawn:
        item.state, item.label = PairItem.State.CONSENSUS, "H" if item.selection["predicted"] == "H" else "N"
        item.save()
    h = sum(1 for item in drawn if item.label == "H")
    report = rounds.round_report(pair_round)
    html = login(admin_user).get("/projects/pairs/pairs/rounds/2/").content.decode()
    assert text_of(html, r'data-metric="n"><th>[^<]+</th>\s*<td>([^<]+)<') == "8"
    assert text_of(html, r'data-metric="accuracy"><th>[^<]+</th>\s*<td>([^<]+)<') == "1.000"
    assert text_of(html, r'data-metric="brier"><th>[^<]+</th>\s*<td>([^<]+)<') == f"{report['metrics']['brier']:.3f}"
    assert text_of(html, r'data-figure="reached">(.*?)</dd>') == f"{100 * h / 8:.2f}% H ({h} H, {8 - h} N)"
    promised = pair_round.promised_h_share
    if promised is not None:
        assert text_of(html, r'data-figure="promised">(.*?)</dd>') == f"{100 * promised:.2f}% H"
    assert 'data-role="ratio"' in html and funnel(html)["pool"] == 30


def test_the_ratio_panel_shows_r_0_where_both_predicted_groups_are_h_majority() -> None:
    from django.template.loader import render_to_string

    from annotate.views.pairs.rounds.words import ratio_context

    # (5-25)/(40-10) = -0.667 < 0 with TP > FP and FN > TN: R = 0 (DESIGN.md), the formula's value in words.
    panel = render_to_string("annotate/pairs/_ratio.html",
                             {"ratio": ratio_context(subsampling_ratio(40, 10, 5, 25).as_dict())})
    assert text_of(panel, r'data-figure="R">([^<]+)<') == "0.0000"
    assert "R, set to 0: (TN−FN)/(TP−FP) is negative and both predicted groups are H-majority" in panel
    assert text_of(panel, r'data-figure="closed_form">([^<]+)<') == "-0.6667"
    assert "before R is set to 0" in panel
    assert "= -0.6667 &lt; 0" in panel and "R = 0: keep no predicted-H item" in panel
    assert 'data-action="keep_no_h"' in panel
    # A round stored before R was set to 0 there (R = the formula's negative value) shows R = 0 too.
    stored = subsampling_ratio(40, 10, 5, 25).as_dict() | {"R": -2 / 3}
    panel = render_to_string("annotate/pairs/_ratio.html", {"ratio": ratio_context(stored)})
    assert text_of(panel, r'data-figure="R">([^<]+)<') == "0.0000"
