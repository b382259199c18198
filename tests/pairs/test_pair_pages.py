"""The admin pages of a pairs project: project page, import, settings, export, round wizard, round page, flags."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import timezone

from annotate.models import (
    BlockedJudge,
    Job,
    JudgeFlag,
    PairConfig,
    PairItem,
    PairJudgement,
    PairOriginal,
    PairRound,
    PerturbedText,
    Project,
)
from annotate.services.pairs import config, export, flags, queue, rounds
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_rounds import add_items, add_training

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PAGE = "/projects/pairs/"
WIZARD = "/projects/pairs/pairs/rounds/new/"
FLAGS = "/projects/pairs/pairs/flags/"
HADES_EXAMPLE = (Path(__file__).parent / "hades_example.jsonl").read_bytes()
# The wizard's fields with a band that keeps everything: every funnel count is then worked out from the fixture.
OPEN = {"size": "100", "low": "0", "high": "1", "paraphrase_max": "1", "drop_fraction": "0", "seed": "5"}


def text_of(html: str, pattern: str) -> str:
    """The first group of ``pattern`` in the page, or a failure saying what was looked for."""
    found = re.search(pattern, html, re.S)
    assert found, f"{pattern!r} not in the page"
    return found.group(1).strip()


def funnel(html: str) -> dict[str, int]:
    """Each funnel step's count, by its data-step."""
    block = text_of(html, r'(<table class="grid funnel" data-role="funnel">.*?</table>)')
    return {step: int(count) for step, count in
            re.findall(r'<tr data-step="([a-z_]+)">.*?data-role="count">(\d+)<', block, re.S)}


def answer(item: PairItem, judge: Any, label: str, seconds: float = 20.0) -> PairJudgement:
    now = timezone.now()
    return PairJudgement.objects.create(item=item, judge=judge, round=item.round, label=label,
                                        served_at=now - timezone.timedelta(seconds=seconds), answered_at=now,
                                        seconds=seconds)


@pytest.fixture
def detector_project(pairs_project: Project) -> Project:
    """Round 1 done (40 consensus items, 20 H, 20 N) and a pool of 30 with known paraphrase similarities and swaps.

    The detector learns P(H) of about 0.25 at t = -1 and 0.75 at t = 1 (inside a [0.1, 0.9] band) and about
    0 and 1 at t = -2 and 2 (outside it); see tests/pairs/factories_rounds.py.
    """
    first = PairRound.objects.create(project=pairs_project, number=1, size=40, seed=1, status=PairRound.Status.CLOSED)
    add_training(pairs_project, {-2: (0, 8), -1: (2, 6), 0: (4, 4), 1: (6, 2), 2: (8, 0)}, pair_round=first)
    # In the band: 20 items, of which 4 are paraphrases (0.95) and 4 date swaps among the 16 others.
    in_band = [-1.0] * 10 + [1.0] * 10
    paraphrase = [0.95 if index % 5 == 0 else 0.5 for index in range(20)]
    swaps = ["date" if index % 5 == 1 else "" for index in range(20)]
    add_items(pairs_project, in_band, paraphrase=paraphrase, swaps=swaps)
    add_items(pairs_project, [-2.0] * 5 + [2.0] * 5)
    return pairs_project


# --- the project page -----------------------------------------------------------------------------------------


def test_admin_sees_counts_by_state_rounds_and_the_admin_controls(pairs_project: Project, admin_user: Any,
                                                                   alice: Any, bob: Any) -> None:
    items = make_pair_items(pairs_project, 3)
    make_pair_items(pairs_project, 2, round_number=None)
    PairOriginal.objects.create(project=pairs_project, external_id="raw-1", text="A raw text to perturb.")
    answer(items[0], alice, "H")
    answer(items[0], bob, "N")
    response = login(admin_user).get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert text_of(html, r'data-count="originals"><th>Originals</th><td>(\d+)') == "6"
    assert "(1 not perturbed yet)" in html
    assert text_of(html, r'data-count="perturbed"><th>Perturbed texts</th><td>(\d+)') == "5"
    assert text_of(html, r'data-state="open">.*?<td>(\d+)</td>') == "3"
    assert text_of(html, r'data-state="pool">.*?<td>(\d+)</td>') == "2"
    assert text_of(html, r'data-state="consensus">.*?<td>(\d+)</td>') == "0"
    assert text_of(html, r'data-count="judgements"><th>Judgements</th><td>(\d+)') == "2"
    assert 'data-round="1"' in html and "/projects/pairs/pairs/rounds/1/" in html
    for part in ('id="import"', 'name="format" value="raw"', 'name="format" value="pairs"',
                 'name="format" value="hades"', 'id="pair-settings"', 'name="judges_per_item"', 'name="encoder"',
                 'data-role="export-pairs"', 'data-role="export-hades"', 'data-role="next-round"',
                 'data-role="flags-link"', "/projects/pairs/pairs/label/"):
        assert part in html, part


def test_project_page_shows_the_agreement_figures_per_round_and_overall(pairs_project: Project, admin_user: Any,
                                                                          alice: Any, bob: Any, charlie: Any) -> None:
    from annotate.models import Membership

    Membership.objects.create(project=pairs_project, user=charlie, role=Membership.Role.ANNOTATOR)
    items = make_pair_items(pairs_project, 2)
    # Item 1: H, H, N (consensus H, 2 of 3 agree); item 2: N, N, N (unanimous).
    for item, labels in ((items[0], "HHN"), (items[1], "NNN")):
        for judge, label in zip((alice, bob, charlie), labels, strict=True):
            answer(item, judge, label)
        item.votes_h, item.votes_n = labels.count("H"), labels.count("N")
        item.state, item.label = PairItem.State.CONSENSUS, "H" if labels.count("H") > 1 else "N"
        item.save()
    html = login(admin_user).get(PAGE).content.decode()
    row = text_of(html, r'(<tr data-round="1">.*?</tr>)')
    overall = text_of(html, r'(<tr data-round="overall">.*?</tr>)')
    for figures in (row, overall):
        assert text_of(figures, r'data-col="items">(\d+)<') == "2"
        assert text_of(figures, r'data-col="consensus">([^<]+)<') == "100.00%"
        assert text_of(figures, r'data-col="unanimous">([^<]+)<') == "50.00%"  # item 2 only
        assert text_of(figures, r'data-col="agree80">([^<]+)<') == "50.00%"  # 2 of 3 is under 80%
        assert text_of(figures, r'data-col="no_consensus">([^<]+)<') == "0.00%"


def test_missing_perturbation_models_are_named_and_the_rest_still_works(pairs_project: Project, admin_user: Any,
                                                                         settings: Any) -> None:
    settings.PAIRS_MASKED_LM = ""
    settings.PAIRS_CAUSAL_LM = ""
    missing = config.missing_model_settings(pairs_project)
    assert missing
    html = login(admin_user).get(PAGE).content.decode()
    block = text_of(html, r'(<div class="notice" data-role="missing-model">.*?</div>)')
    for sentence in missing:
        assert sentence.replace("'", "&#x27;").replace('"', "&quot;") in block
    assert "PAIRS_MASKED_LM" in block and "PAIRS_CAUSAL_LM" in block
    assert 'data-role="start-perturbation"' not in html
    # The rest of the page is all there.
    assert 'id="import"' in html and 'data-role="next-round"' in html and 'id="pair-settings"' in html


def test_annotator_sees_their_labeling_link_and_own_progress_only(pairs_project: Project, alice: Any,
                                                                   bob: Any) -> None:
    items = make_pair_items(pairs_project, 3)
    answer(items[0], alice, "H")
    answer(items[0], bob, "N")
    answer(items[1], bob, "N")
    items[1].state, items[1].label = PairItem.State.CONSENSUS, "N"
    items[1].save()
    response = login(alice).get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "/projects/pairs/pairs/label/" in html
    assert text_of(html, r'data-role="answered">(\d+)<') == "1"
    assert text_of(html, r'data-role="left">(\d+)<') == "1"  # item 3: she answered item 1, item 2 is decided
    for hidden in ("onsensus", "greement", "alpha", "data-role=\"rounds\"", "data-state=", "Import",
                   "pair-settings", "export", "bob"):
        assert hidden not in html, hidden
    # The status fragment is for reviewers: an annotator asking for it gets her own page back.
    fragment = login(alice).get(PAGE, HTTP_HX_TARGET="pair-status", **HTMX).content.decode()
    assert "data-state=" not in fragment


def test_project_page_outsider_wrong_method_and_htmx_fragment(pairs_project: Project, admin_user: Any,
                                                              charlie: Any) -> None:
    assert login(charlie).get(PAGE).status_code == 404
    assert login(admin_user).post(PAGE).status_code == 405
    fragment = login(admin_user).get(PAGE, HTTP_HX_TARGET="pair-status", **HTMX).content.decode()
    assert 'id="pair-status"' in fragment and "<html" not in fragment and 'id="import"' not in fragment


def test_the_status_section_polls_itself_only_while_a_job_runs(pairs_project: Project, admin_user: Any) -> None:
    html = login(admin_user).get(PAGE).content.decode()
    assert 'hx-trigger="every 3s"' not in html
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PERTURB, total=4)
    html = login(admin_user).get(PAGE).content.decode()
    section = text_of(html, r'(<section class="card" id="pair-status"[^>]*>)')
    # The section replaces itself; it must not hand its target and selection down to the job inside it.
    assert 'hx-target="#pair-status"' in section and 'hx-select="#pair-status"' in section
    assert 'hx-disinherit="hx-target hx-select hx-swap"' in section
    job_element = text_of(html, rf'(<div class="job" id="job-{job.pk}"[^>]*>)')
    assert 'hx-target="this"' in job_element and 'hx-select="unset"' in job_element


# --- import, settings, export, perturbation ---------------------------------------------------------------------


def import_files(client: Client, fmt: str, name: str, content: bytes) -> Any:
    upload = SimpleUploadedFile(name, content, content_type="application/jsonl")
    return client.post("/projects/pairs/pairs/import/", {"format": fmt, "files": [upload]}, follow=True)


def test_a_hades_file_imports_from_the_page(pairs_project: Project, admin_user: Any) -> None:
    rows = [json.loads(line) for line in HADES_EXAMPLE.decode().splitlines() if line.strip()]
    labelled = sum(1 for row in rows if row["hallucination"] in (0, 1))
    response = import_files(login(admin_user), "hades", "hades.jsonl", HADES_EXAMPLE)
    html = response.content.decode()
    assert f"Imported {len(rows)} items ({labelled} labelled, {len(rows) - labelled} in the pool)" in html
    assert PairItem.objects.filter(project=pairs_project).count() == len(rows)
    assert PairItem.objects.filter(project=pairs_project, state=PairItem.State.LABELLED).count() == labelled


def test_a_bad_import_shows_each_error_and_writes_nothing(pairs_project: Project, admin_user: Any) -> None:
    bad = HADES_EXAMPLE + b'{"replaced": "a ===b=== c", "replaced_ids": [0, 0], "hallucination": 1}\nnot json\n'
    lines = len(HADES_EXAMPLE.decode().splitlines())
    html = import_files(login(admin_user), "hades", "bad.jsonl", bad).content.decode()
    assert "Nothing was imported: 2 errors." in html
    assert (f"bad.jsonl: line {lines + 1}: field &#x27;replaced_ids&#x27; [0, 0] does not match the === markers, "
            "which wrap words 1..1 (&#x27;b&#x27;)") in html
    assert f"bad.jsonl: line {lines + 2}: not valid JSON" in html
    assert not PairItem.objects.exists() and not PerturbedText.objects.exists()


def test_an_import_without_a_known_format_or_file_is_refused(pairs_project: Project, admin_user: Any) -> None:
    html = import_files(login(admin_user), "csv", "x.jsonl", HADES_EXAMPLE).content.decode()
    assert "Nothing was imported. format: &#x27;csv&#x27; is not one of raw, pairs, hades." in html
    response = login(admin_user).post("/projects/pairs/pairs/import/", {"format": "hades"}, follow=True)
    assert "Choose at least one .jsonl file" in response.content.decode()
    assert not PairItem.objects.exists()


def test_import_is_for_admins(pairs_project: Project, alice: Any, charlie: Any, admin_user: Any) -> None:
    upload = SimpleUploadedFile("h.jsonl", HADES_EXAMPLE)
    assert login(alice).post("/projects/pairs/pairs/import/", {"format": "hades", "files": [upload]}).status_code == 403
    assert login(charlie).post("/projects/pairs/pairs/import/", {"format": "hades"}).status_code == 404
    assert login(admin_user).get("/projects/pairs/pairs/import/").status_code == 405
    assert not PairItem.objects.exists()


def test_import_htmx_variant_redirects_the_client(pairs_project: Project, admin_user: Any) -> None:
    upload = SimpleUploadedFile("h.jsonl", HADES_EXAMPLE)
    response = login(admin_user).post("/projects/pairs/pairs/import/", {"format": "hades", "files": [upload]}, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == "/projects/pairs/#import"


def test_settings_are_saved_together_or_not_at_all(pairs_project: Project, admin_user: Any, alice: Any) -> None:
    url = "/projects/pairs/pairs/settings/"
    response = login(admin_user).post(url, {"judges_per_item": "3", "max_judges_per_item": "5",
                                            "spam_max_disagreement": "0.25", "encoder": " /models/enc "}, follow=True)
    assert "Pair settings saved." in response.content.decode()
    saved = PairConfig.objects.get(project=pairs_project)
    assert (saved.judges_per_item, saved.max_judges_per_item, saved.spam_max_disagreement, saved.encoder) == (
        3, 5, 0.25, "/models/enc")
    html = login(admin_user).post(url, {"judges_per_item": "6", "max_judges_per_item": "4", "top_k": "many",
                                        "mask_ratio": "0"}, follow=True).content.decode()
    assert "Settings not saved." in html
    assert "top_k: &#x27;many&#x27; is not a whole number." in html
    assert "mask_ratio: 0 must be above 0." in html
    html = login(admin_user).post(url, {"judges_per_item": "6", "max_judges_per_item": "4"}, follow=True).content.decode()
    assert "max_judges_per_item: 4 is below judges_per_item (6)." in html
    assert PairConfig.objects.get(project=pairs_project).judges_per_item == 3
    assert login(alice).post(url, {"judges_per_item": "1"}).status_code == 403
    assert login(admin_user).get(url).status_code == 405


def test_exports_download_both_formats_for_admins_only(pairs_project: Project, admin_user: Any, alice: Any,
                                                       charlie: Any) -> None:
    make_pair_items(pairs_project, 2)
    for fmt in ("pairs", "hades"):
        response = login(admin_user).get(f"/projects/pairs/pairs/export/{fmt}/")
        assert response.status_code == 200
        assert response["Content-Disposition"] == f'attachment; filename="pairs-{fmt}.jsonl"'
        assert response.content.decode() == export.export_pairs(pairs_project, fmt)
        assert len(response.content.decode().splitlines()) == 2
    assert login(admin_user).get("/projects/pairs/pairs/export/csv/").status_code == 404
    assert login(alice).get("/projects/pairs/pairs/export/pairs/").status_code == 403
    assert login(charlie).get("/projects/pairs/pairs/export/pairs/").status_code == 404
    assert login(admin_user).post("/projects/pairs/pairs/export/pairs/").status_code == 405


def test_perturbation_without_models_is_refused_naming_the_setting(pairs_project: Project, admin_user: Any,
                                                                   alice: Any, settings: Any) -> None:
    settings.PAIRS_MASKED_LM = ""
    PairOriginal.objects.create(project=pairs_project, external_id="raw-1", text="A raw text to perturb.")
    html = login(admin_user).post("/projects/pairs/pairs/perturb/", follow=True).content.decode()
    assert "Perturbation not started:" in html and "PAIRS_MASKED_LM" in html
    assert not Job.objects.filter(kind=Job.Kind.PERTURB).exists()
    assert login(alice).post("/projects/pairs/pairs/perturb/").status_code == 403
    assert login(admin_user).get("/projects/pairs/pairs/perturb/").status_code == 405


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
    assert ratio.tp + ratio.fp + ratio.tn + ratio.fn == 40  # cross-validated over the 40 labelled items
    assert text_of(panel, r'data-figure="alpha">([^<]+)<') == f"{ratio.tp / (ratio.tp + ratio.fn):.4f}"
    assert text_of(panel, r'data-figure="gamma">([^<]+)<') == (
        f"{ratio.tp / (ratio.tp + ratio.fp):.4f}" if ratio.tp + ratio.fp else "—")
    if ratio.r is not None and ratio.tp != ratio.fp:
        assert text_of(panel, r'data-figure="R">([^<]+)<') == f"{(ratio.tn - ratio.fn) / (ratio.tp - ratio.fp):.4f}"
    assert f'data-action="{ratio.action}"' in panel and "Where the counts come from" in panel


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
    make_pair_items(pairs_project, 3, round_number=None)
    html = login(admin_user).get(WIZARD, {**OPEN, "size": "0", "low": "0.8", "high": "0.2", "seed": "x"},
                                 **HTMX).content.decode()
    assert "size: 0 is below 1" in html and "high: 0.2 is below low (0.8)" in html
    assert "seed: &#x27;x&#x27; is not a whole number" in html
    assert 'data-role="funnel"' not in html
    response = login(admin_user).post(WIZARD, {**OPEN, "drop_fraction": "2"})
    assert response.status_code == 400 and "drop_fraction: 2 is outside 0..1" in response.content.decode()
    assert not Job.objects.exists() and not PairRound.objects.exists()


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
    assert text_of(html, r'data-figure="reached">(.*?)</dd>') == f"{100 * h / 8:.1f}% H ({h} H, {8 - h} N)"
    promised = pair_round.promised_h_share
    if promised is not None:
        assert text_of(html, r'data-figure="promised">(.*?)</dd>') == f"{100 * promised:.1f}% H"
    assert 'data-role="ratio"' in html and funnel(html)["pool"] == 30


# --- spammer flags ----------------------------------------------------------------------------------------------


@pytest.fixture
def flagged(pairs_project: Project, bob: Any) -> JudgeFlag:
    """bob answered 12 items in 3.2 s each (H and N in turn): the flags page's refresh keeps his too_fast flag."""
    items = make_pair_items(pairs_project, 12)
    for index, item in enumerate(items):
        answer(item, bob, "HN"[index % 2], seconds=3.2)
    queue.recount_items([item.pk for item in items], config.get_config(pairs_project))
    flags.check_judge(pairs_project, bob)
    return JudgeFlag.objects.get(project=pairs_project, judge=bob, rule=JudgeFlag.Rule.TOO_FAST)


def test_flags_page_names_the_rule_and_figures(flagged: JudgeFlag, admin_user: Any) -> None:
    html = login(admin_user).get(FLAGS).content.decode()
    row = text_of(html, rf'(<tr data-flag="{flagged.pk}" data-judge="bob" data-rule="too_fast">.*?</tr>)')
    assert ("Mean time per item under the limit: mean time per item 3.2 s over 12 timed judgements, under the "
            "limit of 10.0 s.") in row
    assert 'data-role="block"' in row and 'data-role="dismiss"' in row


def test_blocking_needs_a_reason_and_then_takes_the_judge_out(flagged: JudgeFlag, pairs_project: Project,
                                                              admin_user: Any, alice: Any, bob: Any) -> None:
    item = make_pair_items(pairs_project, 1)[0]
    answer(item, bob, "H")
    url = f"/projects/pairs/pairs/flags/{flagged.pk}/block/"
    refused = login(admin_user).post(url, {"reason": "  "}, **HTMX).content.decode()
    assert "reason: say why you block this judge" in refused and "<html" not in refused
    assert not BlockedJudge.objects.exists()
    assert login(alice).post(url, {"reason": "x"}).status_code == 403
    assert login(admin_user).get(url).status_code == 405

    fragment = login(admin_user).post(url, {"reason": "3 s an item"}, **HTMX).content.decode()
    assert 'id="flag-lists"' in fragment and "<html" not in fragment
    assert text_of(fragment, r'<table class="grid" data-role="blocked-judges">.*?<tr data-judge="bob">(.*?)</tr>') \
        .startswith("<td>bob</td><td>3 s an item</td>")
    assert BlockedJudge.objects.get(judge=bob).reason == "3 s an item"
    assert not PairJudgement.objects.filter(judge=bob, counted=True).exists()
    assert JudgeFlag.objects.get(pk=flagged.pk).status == JudgeFlag.Status.BLOCKED


def test_dismissing_a_flag_keeps_the_judge(flagged: JudgeFlag, admin_user: Any, bob: Any, charlie: Any) -> None:
    url = f"/projects/pairs/pairs/flags/{flagged.pk}/dismiss/"
    assert login(charlie).post(url).status_code == 404
    response = login(admin_user).post(url, follow=True)
    assert "Flag on bob dismissed." in response.content.decode()
    flagged.refresh_from_db()
    assert flagged.status == JudgeFlag.Status.DISMISSED and flagged.reviewed_by is not None
    assert not BlockedJudge.objects.exists()
    html = login(admin_user).get(FLAGS).content.decode()
    assert "No open flags." in html and "Dismissed" in text_of(html, r'data-role="reviewed-flags">(.*?)</table>')


def test_flags_page_is_for_admins(pairs_project: Project, alice: Any, charlie: Any, admin_user: Any) -> None:
    assert login(alice).get(FLAGS).status_code == 403
    assert login(charlie).get(FLAGS).status_code == 404
    assert login(admin_user).post(FLAGS).status_code == 405
    fragment = login(admin_user).get(FLAGS, **HTMX).content.decode()
    assert 'id="flag-lists"' in fragment and "<html" not in fragment


def test_unblocking_makes_the_judges_answers_count_again(flagged: JudgeFlag, pairs_project: Project,
                                                         admin_user: Any, alice: Any, bob: Any, charlie: Any) -> None:
    block_url = f"/projects/pairs/pairs/flags/{flagged.pk}/block/"
    assert login(admin_user).post(block_url, {"reason": "3 s an item"}).status_code == 302
    assert PairItem.objects.filter(project=pairs_project, votes_h=0, votes_n=0).count() == 12
    url = f"/projects/pairs/pairs/flags/judges/{bob.pk}/unblock/"
    assert login(charlie).post(url).status_code == 404
    assert login(alice).post(url).status_code == 403
    assert login(admin_user).get(url).status_code == 405
    assert BlockedJudge.objects.filter(judge=bob).exists()

    response = login(admin_user).post(url, follow=True)
    assert "bob is no longer blocked" in response.content.decode()
    assert not BlockedJudge.objects.exists()
    assert PairJudgement.objects.filter(judge=bob, counted=True).count() == 12
    # Each item has bob's one answer back: H on the even ones, N on the odd ones.
    items = list(PairItem.objects.filter(project=pairs_project).order_by("id"))
    assert [(item.votes_h, item.votes_n) for item in items] == [(1, 0), (0, 1)] * 6
    assert JudgeFlag.objects.get(pk=flagged.pk).status == JudgeFlag.Status.DISMISSED
    assert login(admin_user).post(url).status_code == 404  # not blocked any more
