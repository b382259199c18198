"""The project page of a pairs project: counts, agreement, status polling, import, settings, export, perturbation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from annotate.models import Job, PairConfig, PairItem, PairOriginal, PerturbedText, Project
from annotate.services.pairs import config, export
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.page_helpers import HADES_EXAMPLE, HTMX, PAGE, answer, text_of

pytestmark = pytest.mark.django_db


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


def test_the_span_vector_row_counts_the_items_not_a_queued_jobs_progress(pairs_project: Project, admin_user: Any,
                                                                          settings: Any) -> None:
    # Before: "Span vectors of pair items 0 / 4 · Queued" while every item had its vector (no worker had run yet).
    items = make_pair_items(pairs_project, 4)
    PairItem.objects.filter(pk__in=[item.pk for item in items]).update(
        vector=b"\x00\x00", vector_model=settings.PAIRS_ENCODER
    )
    job = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_VECTORS, total=4)
    html = login(admin_user).get(PAGE).content.decode()
    assert text_of(html, r'data-count="vectors"><th>[^<]*</th><td>(\d+ of \d+)') == "4 of 4"
    assert 'data-role="vectors-missing"' not in html
    assert f'id="job-{job.pk}"' not in html  # nothing is missing: the queued job's 0 / 4 is not the items' state
    assert 'hx-trigger="every 3s"' not in html  # and nothing to follow
    # One item loses its vector (another encoder): the count says so, and the job's state shows again.
    PairItem.objects.filter(pk=items[0].pk).update(vector_model="another-encoder")
    html = login(admin_user).get(PAGE).content.decode()
    assert text_of(html, r'data-count="vectors"><th>[^<]*</th><td>(\d+ of \d+)') == "3 of 4"
    assert text_of(html, r'data-role="vectors-missing">\((\d+) missing') == "1"
    assert f'id="job-{job.pk}"' in html and 'hx-trigger="every 3s"' in html


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
    response = login(admin_user).post(url, {"judges_per_item": "6", "max_judges_per_item": "4", "top_k": "many",
                                            "mask_ratio": "0"})
    html = response.content.decode()
    assert response.status_code == 400 and "Settings not saved" in html
    assert "Top-k: &#x27;many&#x27; is not a whole number." in html
    assert "Mask ratio: 0 must be above 0." in html
    html = login(admin_user).post(url, {"judges_per_item": "6", "max_judges_per_item": "4"}).content.decode()
    assert "At most, after splits: 4 is below Judges per item (6)." in html
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
        body = b"".join(response.streaming_content).decode()  # the view streams the file line by line
        assert body == export.export_pairs(pairs_project, fmt)
        assert len(body.splitlines()) == 2
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
