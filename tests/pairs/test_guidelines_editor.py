"""A pairs project's guidelines are edited on /projects/<slug>/labels/ ("Edit guidelines"), guidelines only, linked
from its page; every member reads them on /projects/<slug>/guidelines/."""

from __future__ import annotations

import re
from typing import Any

import pytest

from annotate.models import LabelSetVersion, Project
from annotate.services.pairs.guidelines import DEFAULT_PAIR_GUIDELINES
from tests.conftest import login

pytestmark = pytest.mark.django_db

EDITOR = "/projects/pairs/labels/"
LABEL_PAGE = "/projects/pairs/pairs/label/"


def guidelines_shown_to_judges(html: str) -> str:
    found = re.search(r'data-role="guidelines-text">(.*?)</div>', html, re.S)
    assert found, "the labeling page shows no guidelines"
    return found.group(1)


def test_admin_edits_a_pairs_projects_guidelines_as_a_new_version_that_judges_read(
    pairs_project: Project, admin_user: Any, alice: Any
) -> None:
    taxonomy_before = Project.objects.get(pk=pairs_project.pk).taxonomy
    text = "Read the original first.\n\nA changed year is H."
    response = login(admin_user).post(EDITOR, {"guidelines": text, "note": "first own guidelines"}, follow=True)
    assert response.status_code == 200
    assert "Saved the guidelines as version 2." in response.content.decode()
    versions = list(LabelSetVersion.objects.filter(project=pairs_project).order_by("number"))
    # Version 1 keeps what stood before (blank: judges read the default); version 2 is the edit, with its note.
    assert [(v.number, v.guidelines, v.note) for v in versions] == [
        (1, "", "the guidelines before their first edit here"),
        (2, text, "first own guidelines"),
    ]
    assert versions[1].created_by == admin_user
    project = Project.objects.get(pk=pairs_project.pk)
    assert project.guidelines == text
    assert project.taxonomy == taxonomy_before  # the (unused) label set is left as it was
    shown = guidelines_shown_to_judges(login(alice).get(LABEL_PAGE).content.decode())
    assert shown == "<p>Read the original first.</p>\n\n<p>A changed year is H.</p>"

    second = "A changed year or name is H."
    login(admin_user).post(EDITOR, {"guidelines": second})
    assert LabelSetVersion.objects.filter(project=pairs_project).count() == 3
    assert guidelines_shown_to_judges(login(alice).get(LABEL_PAGE).content.decode()) == f"<p>{second}</p>"
    # The history page shows an old version's text, and starts an edit from it.
    html = login(admin_user).get(EDITOR, {"version": 2}).content.decode()
    assert 'data-version="2"' in html and "A changed year is H." in html
    html = login(admin_user).get(EDITOR, {"edit_from": 2}).content.decode()
    assert f">{text}</textarea>" in html and 'value="from version 2"' in html


def test_the_pairs_guidelines_page_has_no_span_label_fields(pairs_project: Project, admin_user: Any) -> None:
    html = login(admin_user).get(EDITOR).content.decode()
    assert "<h1>Edit guidelines</h1>" in html
    fields = set(re.findall(r'<(?:input|select|textarea)\b[^>]*\bname="([^"]+)"', html))
    # base_version: the version the form was opened at (a save after a newer one is refused).
    assert fields == {"csrfmiddlewaretoken", "base_version", "guidelines", "note"}
    assert "Labels and guidelines" not in html
    # While the project's own guidelines are blank, the page shows the default that judges read.
    assert 'data-role="default-guidelines"' in html
    assert "Example 1, a changed date (H)." in html and DEFAULT_PAIR_GUIDELINES.startswith("Each item shows")


def test_label_fields_posted_to_a_pairs_project_change_no_label_set(pairs_project: Project, admin_user: Any) -> None:
    taxonomy_before = Project.objects.get(pk=pairs_project.pk).taxonomy
    login(admin_user).post(EDITOR, {"guidelines": "Own text.", "name": ["Unwanted.New"], "category": ["U"],
                                    "hotkey": ["z"], "color": [""], "description": [""], "example": [""]})
    project = Project.objects.get(pk=pairs_project.pk)
    assert project.guidelines == "Own text." and project.taxonomy == taxonomy_before


def test_saving_unchanged_guidelines_is_refused_and_nothing_is_saved(pairs_project: Project, admin_user: Any) -> None:
    response = login(admin_user).post(EDITOR, {"guidelines": "  "})
    assert response.status_code == 400
    assert "nothing changed since the current guidelines; edit the guidelines first" in response.content.decode()
    assert not LabelSetVersion.objects.filter(project=pairs_project).exists()


def test_the_pairs_project_page_links_the_guidelines_for_admins_only(
    pairs_project: Project, admin_user: Any, alice: Any
) -> None:
    link = f'<a href="{EDITOR}" data-role="guidelines-link">Edit guidelines</a>'
    assert link in login(admin_user).get("/projects/pairs/").content.decode()
    assert 'data-role="guidelines-link"' not in login(alice).get("/projects/pairs/").content.decode()


def test_annotators_and_outsiders_cannot_edit_the_guidelines(
    pairs_project: Project, alice: Any, charlie: Any
) -> None:
    assert login(alice).get(EDITOR).status_code == 403
    assert login(alice).post(EDITOR, {"guidelines": "Mine."}).status_code == 403
    assert login(charlie).get(EDITOR).status_code == 404
    assert Project.objects.get(pk=pairs_project.pk).guidelines == ""


def test_the_htmx_variant_redirects_on_save_and_swaps_the_editor_with_the_errors(
    pairs_project: Project, admin_user: Any
) -> None:
    htmx = {"HTTP_HX_REQUEST": "true"}
    saved = login(admin_user).post(EDITOR, {"guidelines": "Own text."}, **htmx)
    assert saved.status_code == 200 and saved["HX-Redirect"] == EDITOR
    refused = login(admin_user).post(EDITOR, {"guidelines": "Own text."}, **htmx)
    html = refused.content.decode()
    assert refused.status_code == 400 and html.lstrip().startswith('<section class="card" id="label-editor">')
    assert "nothing changed since version 2; edit the guidelines first" in html
    assert set(re.findall(r'<(?:input|select|textarea)\b[^>]*\bname="([^"]+)"', html)) == {
        "csrfmiddlewaretoken", "guidelines", "note"}
    assert login(admin_user).put(EDITOR).status_code == 405


def test_members_read_a_pairs_projects_guidelines_or_the_default_without_span_labels(
    pairs_project: Project, admin_user: Any, alice: Any
) -> None:
    html = login(alice).get("/projects/pairs/guidelines/").content.decode()
    assert "<h1>Guidelines</h1>" in html and 'data-role="labels"' not in html
    assert 'data-role="default-guidelines"' in html and "Example 1, a changed date (H)." in html
    login(admin_user).post(EDITOR, {"guidelines": "A changed year is H."})
    html = login(alice).get("/projects/pairs/guidelines/").content.decode()
    assert "<p>A changed year is H.</p>" in html and 'data-role="default-guidelines"' not in html
