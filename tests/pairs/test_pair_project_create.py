"""Starting a pairs project from the browser: the new-project form's kind, set up as import_pairs sets up a new slug."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.forms.models import model_to_dict

from annotate.models import Membership, PairConfig, PairItem, Project
from annotate.services.pairs.ingest import import_pairs
from annotate.services.projects import ProjectError, create_project
from tests.conftest import login
from tests.pairs.page_helpers import HADES_EXAMPLE, HTMX

pytestmark = pytest.mark.django_db

NEW = "/projects/new/"
DEMO_PAIRS = Path(settings.BASE_DIR) / "fixtures" / "demo_pairs.jsonl"
KIND_ERROR = "kind: {kind!r} is not a project kind; choose one of spans (span annotation), pairs (perturbed pairs)"


def kind_inputs(html: str) -> dict[str, bool]:
    """Each kind radio's value, and whether it is checked."""
    return {value: bool(checked) for value, checked in
            re.findall(r'<input type="radio" name="kind" value="([a-z]+)"( checked)?>', html)}


def setup_of(project: Project) -> dict[str, Any]:
    """What a project starts with, apart from its name and slug: what the two ways of making one must agree on."""
    return {
        "kind": project.kind,
        "taxonomy": project.taxonomy,
        "annotators_per_batch": project.annotators_per_batch,
        "guidelines": project.guidelines,
        "reveal_generator": project.reveal_generator,
        "members": list(project.memberships.values_list("user__username", "role")),
        "pair_config": model_to_dict(PairConfig.objects.get(project=project), exclude=["id", "project"]),
        "items": PairItem.objects.filter(project=project).count(),
    }


def test_the_form_offers_both_kinds_with_span_annotation_checked(admin_user: Any) -> None:
    html = login(admin_user).get(NEW).content.decode()
    assert kind_inputs(html) == {"spans": True, "pairs": False}
    assert "Span annotation" in html and "Perturbed pairs" in html
    assert "raw texts to perturb, ready pairs or HaDes files" in html


def test_a_pairs_project_from_the_form_is_set_up_as_import_pairs_sets_up_a_new_slug(admin_user: Any) -> None:
    response = login(admin_user).post(NEW, {"name": "Bridges", "slug": "from-form", "kind": "pairs"})
    assert response.status_code == 302 and response["Location"] == "/projects/from-form/"
    from_form = Project.objects.get(slug="from-form")
    from_command = import_pairs("from-command", [("h.jsonl", HADES_EXAMPLE)], "hades", user=admin_user).project
    PairItem.objects.filter(project=from_command).delete()  # the import's rows aside, the projects must match
    assert from_form.name == "Bridges"
    assert setup_of(from_form) == setup_of(from_command)
    assert setup_of(from_form)["kind"] == Project.Kind.PAIRS
    assert setup_of(from_form)["members"] == [("adam", Membership.Role.ADMIN)]


def test_the_new_pairs_project_opens_on_its_page_whose_form_imports_the_demo_pairs(admin_user: Any) -> None:
    client = login(admin_user)
    landing = client.post(NEW, {"name": "Bridges", "kind": "pairs"}, follow=True)
    html = landing.content.decode()
    assert landing.redirect_chain == [("/projects/bridges/", 302)]
    assert "Perturbed pairs (HaDes)" in html
    form = re.search(r'<section class="card" id="import">.*?</section>', html, re.S)
    assert form, "the pairs project page has no import form"
    assert 'action="/projects/bridges/pairs/import/"' in form.group(0)
    assert set(re.findall(r'name="format" value="([a-z]+)"', form.group(0))) == {"raw", "pairs", "hades"}

    upload = SimpleUploadedFile(DEMO_PAIRS.name, DEMO_PAIRS.read_bytes(), content_type="application/jsonl")
    done = client.post("/projects/bridges/pairs/import/", {"format": "pairs", "files": [upload]}, follow=True)
    rows = sum(1 for line in DEMO_PAIRS.read_text(encoding="utf-8").splitlines() if line.strip())
    assert f"Imported {rows} items (0 labelled, {rows} in the pool)" in done.content.decode()
    assert PairItem.objects.filter(project__slug="bridges", state=PairItem.State.POOL).count() == rows


@pytest.mark.parametrize("kind", ["faithbench", "", "PAIRS"])
def test_an_unknown_kind_is_named_and_nothing_is_created(admin_user: Any, kind: str) -> None:
    response = login(admin_user).post(NEW, {"name": "Bridges", "slug": "bridges", "kind": kind})
    assert response.status_code == 400
    html = response.content.decode()
    assert f'<p class="error" role="alert">{KIND_ERROR.format(kind=kind)}</p>'.replace("'", "&#x27;") in html
    assert 'value="bridges"' in html  # what was typed stays
    assert kind_inputs(html) == {"spans": True, "pairs": False}
    assert not Project.objects.exists() and not Membership.objects.exists() and not PairConfig.objects.exists()


def test_the_service_refuses_an_unknown_kind_before_writing(admin_user: Any) -> None:
    with pytest.raises(ProjectError) as failure:
        create_project("Bridges", owner=admin_user, kind="triplets")
    assert str(failure.value) == KIND_ERROR.format(kind="triplets")
    assert not Project.objects.exists() and not Membership.objects.exists()


def test_without_a_kind_the_form_makes_a_span_project_without_pair_settings(admin_user: Any) -> None:
    assert login(admin_user).post(NEW, {"name": "Pilot"}).status_code == 302
    project = Project.objects.get(slug="pilot")
    assert project.kind == Project.Kind.SPANS
    assert not PairConfig.objects.filter(project=project).exists()


def test_only_staff_create_a_pairs_project_and_only_by_get_or_post(admin_user: Any, alice: Any) -> None:
    assert login(alice).post(NEW, {"name": "Bridges", "kind": "pairs"}).status_code == 403
    assert login(admin_user).put(NEW, {"name": "Bridges", "kind": "pairs"}).status_code == 405
    assert login(admin_user).delete(NEW).status_code == 405
    assert not Project.objects.exists()


def test_an_htmx_post_creates_the_pairs_project_like_a_plain_one(admin_user: Any) -> None:
    response = login(admin_user).post(NEW, {"name": "Bridges", "kind": "pairs"}, **HTMX)
    assert response.status_code == 302 and response["Location"] == "/projects/bridges/"
    assert Project.objects.get(slug="bridges").kind == Project.Kind.PAIRS
