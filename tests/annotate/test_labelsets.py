"""Label sets and guidelines: the pure checks, the versioned service, the editor page, retired labels in use."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from annotate.models import GoldLabel, LabelSetVersion, Membership, Project, SpanAnnotation
from annotate.services import ingest, labelsets, spans
from annotate.taxonomy import (
    DEFAULT_TAXONOMY,
    LabelError,
    LabelSetError,
    check_label_set,
    hotkey_labels,
    normalize_labels,
    validate_labels,
)
from tests.conftest import faithbench_file, login

pytestmark = pytest.mark.django_db


def make_user(username: str) -> Any:
    """A user without a password (hashing one takes most of a test's time); tests log in with force_login."""
    return get_user_model().objects.create_user(username=username)
HTMX = {"HTTP_HX_REQUEST": "true"}
URL = "/projects/demo/labels/"


def default_labels() -> list[dict[str, Any]]:
    return copy.deepcopy(DEFAULT_TAXONOMY["labels"])


def problems_of(labels: list[Any], in_use: dict[str, int] | None = None) -> list[str]:
    with pytest.raises(LabelSetError) as caught:
        check_label_set(labels, previous=DEFAULT_TAXONOMY, in_use=in_use or {})
    return caught.value.problems


# --------------------------------------------------------------------------- pure checks


def test_a_valid_edit_keeps_order_and_normalises_the_colour() -> None:
    labels = default_labels()
    labels[3]["color"] = "#7EA6D8"
    labels.append({"name": "Benign.Style", "category": "B", "hotkey": "5", "color": "#abc",
                   "description": " Wording only. ", "example": ""})
    taxonomy = check_label_set(labels, previous=DEFAULT_TAXONOMY, in_use={})
    assert [label["name"] for label in taxonomy["labels"]] == [
        "Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable", "Benign", "Benign.Style"]
    assert taxonomy["labels"][3]["color"] == "#7ea6d8"
    assert taxonomy["labels"][4] == {"name": "Benign.Style", "category": "B", "hotkey": "5", "color": "#abc",
                                     "description": "Wording only.", "example": ""}
    # The default set goes through unchanged, so saving it again is "nothing changed".
    assert check_label_set(default_labels(), previous=DEFAULT_TAXONOMY, in_use={}) == DEFAULT_TAXONOMY


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": "Questionable"}, "label 4 ('Questionable'): the name is already used by label 3"),
        ({"hotkey": "3"}, "label 4 ('Benign'): the hotkey '3' is already used by label 3 ('Questionable')"),
        ({"color": "blue"}, "label 4 ('Benign'): the colour 'blue' is not a hex colour such as #c8412f"),
        ({"color": "#12345"}, "label 4 ('Benign'): the colour '#12345' is not a hex colour"),
        ({"name": "  "}, "label 4: the name is empty"),
        ({"category": "C"}, "label 4 ('Benign'): unknown category 'C'; choose U (Unwanted), Q (Questionable) or B"),
        ({"category": "X"}, "label 4 ('Benign'): unknown category 'X'"),
        ({"hotkey": "42"}, "label 4 ('Benign'): the hotkey '42' must be a single character"),
        ({"hotkey": "d"}, "label 4 ('Benign'): the hotkey 'd' is already a shortcut of the annotation page"),
        ({"hotkey": ""}, "label 4 ('Benign'): give it a hotkey"),
        ({"name": "Unwanted.Other"}, "names beginning with 'Unwanted' always count as Unwanted; choose category U"),
        ({"name": "Unwanted.Instrinsic", "category": "U"}, "misspelling is read from old imports only"),
        ({"name": "A|B"}, "a name cannot contain '|'"),
        ({"retired": "yes"}, "label 4 ('Benign'): retired must be true or false"),
        ({"description": 7}, "label 4 ('Benign'): description must be text"),
    ],
)
def test_each_bad_label_gets_a_message_naming_it(change: dict[str, Any], message: str) -> None:
    labels = default_labels()
    labels[3].update(change)
    assert any(message in problem for problem in problems_of(labels)), problems_of(labels)


def test_every_problem_is_listed_at_once() -> None:
    labels = default_labels()
    labels[0]["color"] = "red"
    labels[3]["category"] = "Z"
    assert len(problems_of(labels)) == 2


def test_children_of_one_parent_must_share_its_category() -> None:
    labels = default_labels() + [
        {"name": "Style.Minor", "category": "B", "hotkey": "5"},
        {"name": "Style.Major", "category": "Q", "hotkey": "6"},
    ]
    assert problems_of(labels) == [
        "label 6 ('Style.Major'): category Q, but label 5 ('Style.Minor') has B and both come under 'Style', "
        "which can have only one category"
    ]


def test_an_empty_or_all_retired_set_is_refused() -> None:
    assert problems_of([]) == ["the label set is empty; add at least one label"]
    retired = [label | {"retired": True} for label in default_labels()]
    assert problems_of(retired) == ["keep at least one label that is not retired, or nothing can be annotated"]


def test_a_retired_label_frees_its_hotkey() -> None:
    labels = default_labels()
    labels[3]["retired"] = True
    labels.append({"name": "Benign.Common", "category": "B", "hotkey": "4"})
    taxonomy = check_label_set(labels, previous=DEFAULT_TAXONOMY, in_use={"Benign": 3})
    assert taxonomy["labels"][3]["retired"] is True


def test_labels_in_use_cannot_be_deleted_renamed_or_recategorised() -> None:
    deleted = [label for label in default_labels() if label["name"] != "Benign"]
    assert problems_of(deleted, {"Benign": 2}) == [
        "label 'Benign': used by 2 spans of this project, so it cannot be deleted or renamed; mark it retired instead"
    ]
    renamed = default_labels()
    renamed[3]["name"] = "Harmless"
    assert "cannot be deleted or renamed" in problems_of(renamed, {"Benign": 1})[0]
    moved = default_labels()
    moved[3]["category"] = "Q"
    assert problems_of(moved, {"Benign": 1}) == [
        "label 4 ('Benign'): used by 1 span of this project, so its category cannot change from B to Q; "
        "retire it and add a new label instead"
    ]
    # Unused, the same edits pass.
    check_label_set(deleted, previous=DEFAULT_TAXONOMY, in_use={"Questionable": 4})


def test_a_parent_in_use_stays_while_one_child_is_kept() -> None:
    without_intrinsic = [label for label in default_labels() if label["name"] != "Unwanted.Intrinsic"]
    check_label_set(without_intrinsic, previous=DEFAULT_TAXONOMY, in_use={"Unwanted": 5})
    no_unwanted = [label for label in default_labels() if not label["name"].startswith("Unwanted")]
    assert "label 'Unwanted': used by 5 spans" in problems_of(no_unwanted, {"Unwanted": 5})[0]


def test_the_app_refuses_the_misspelling_and_retired_labels_which_imports_accept() -> None:
    taxonomy = {"labels": default_labels()}
    taxonomy["labels"][3]["retired"] = True
    with pytest.raises(LabelError, match="'Unwanted.Instrinsic' is a misspelling accepted only from imported files; "
                                         "use 'Unwanted.Intrinsic'"):
        normalize_labels(["Unwanted", "Unwanted.Instrinsic"], taxonomy)
    with pytest.raises(LabelError, match="label 'Benign' is retired"):
        normalize_labels(["Benign"], taxonomy)
    with pytest.raises(LabelError, match="unknown label 'Nope'"):
        normalize_labels(["Nope"], taxonomy)
    assert validate_labels(["Unwanted", "Unwanted.Instrinsic"], taxonomy) == ["Unwanted", "Unwanted.Instrinsic"]
    assert validate_labels(["Benign"], taxonomy) == ["Benign"]
    assert normalize_labels(["Unwanted.Extrinsic"], taxonomy) == ["Unwanted", "Unwanted.Extrinsic"]


def test_hotkey_labels_leave_out_retired_ones_and_carry_the_colour() -> None:
    taxonomy = {"labels": default_labels()}
    taxonomy["labels"][0]["color"] = "#c8412f"
    del taxonomy["labels"][1]["color"]
    taxonomy["labels"][3]["retired"] = True
    offered = hotkey_labels(taxonomy)
    assert [label["name"] for label in offered] == ["Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable"]
    assert [label["color"] for label in offered] == ["#c8412f", None, None]


def test_the_two_unwanted_labels_have_different_colours_by_default() -> None:
    """One category (U), two kinds of error: on the annotation page they must not look the same."""
    colours = {label["name"]: label.get("color") for label in default_labels()}
    assert colours["Unwanted.Intrinsic"] and colours["Unwanted.Extrinsic"]
    assert colours["Unwanted.Intrinsic"] != colours["Unwanted.Extrinsic"]


# --------------------------------------------------------------------------- service


def test_first_save_seeds_version_one_then_adds_the_edit(project: Project, admin_user: Any) -> None:
    project.guidelines = "Old text."
    project.save()
    labels = default_labels()
    labels[2]["color"] = "#e0a530"
    version = labelsets.save_label_set(project, labels, guidelines="New\r\ntext.", note="colours", author=admin_user)
    assert version.number == 2
    first = LabelSetVersion.objects.get(project=project, number=1)
    assert first.taxonomy == DEFAULT_TAXONOMY and first.guidelines == "Old text." and first.created_by is None
    project.refresh_from_db()
    assert project.taxonomy["labels"][2]["color"] == "#e0a530" and project.guidelines == "New\ntext."
    assert (version.note, version.created_by, version.taxonomy) == ("colours", admin_user, project.taxonomy)
    again = labelsets.save_label_set(project, labels, guidelines="Newer.", author=admin_user)
    assert again.number == 3 and LabelSetVersion.objects.filter(project=project).count() == 3


def test_a_refused_save_changes_nothing(project: Project, admin_user: Any) -> None:
    before = copy.deepcopy(project.taxonomy)
    with pytest.raises(LabelSetError, match="nothing changed since the current label set"):
        labelsets.save_label_set(project, default_labels(), guidelines="", author=admin_user)
    bad = default_labels()
    bad[0]["hotkey"] = "2"
    with pytest.raises(LabelSetError, match=r"label 2 \(.Unwanted.Extrinsic.\): the hotkey .2. is already used by label 1"):
        labelsets.save_label_set(project, bad, guidelines="changed", author=admin_user)
    with pytest.raises(LabelSetError, match="note is 301 characters long"):
        labelsets.save_label_set(project, default_labels(), guidelines="changed", note="n" * 301)
    project.refresh_from_db()
    assert project.taxonomy == before and project.guidelines == ""
    assert not LabelSetVersion.objects.exists()


def test_labels_in_use_count_spans_parents_and_gold(sample: Any, alice: Any, bob: Any, admin_user: Any) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Unwanted.Intrinsic"])
    spans.create_span(sample, bob, round=1, start=0, end=4, labels=["Unwanted.Intrinsic"])
    SpanAnnotation.objects.create(sample=sample, annotator=bob, start=5, end=9, text="x", labels=["Questionable"])
    GoldLabel.objects.create(sample=sample, category="B", spans=[{"start": 0, "end": 4, "labels": ["Benign"]}])
    counts = labelsets.labels_in_use(sample.project)
    assert counts == {"Unwanted": 2, "Unwanted.Intrinsic": 2, "Questionable": 1, "Benign": 1}
    without_benign = [label for label in default_labels() if label["name"] != "Benign"]
    with pytest.raises(LabelSetError, match="label 'Benign': used by 1 span of this project"):
        labelsets.save_label_set(sample.project, without_benign, guidelines="", author=admin_user)


def test_a_retired_label_stays_on_spans_and_imports_but_not_in_the_app(sample: Any, alice: Any, admin_user: Any) -> None:
    project = sample.project
    spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Benign"])
    labels = default_labels()
    labels[3]["retired"] = True
    labelsets.save_label_set(project, labels, guidelines="", note="retire Benign", author=admin_user)
    response = login(alice).post("/api/spans/", {"sample": sample.pk, "start": 5, "end": 9, "labels": ["Benign"]},
                                 content_type="application/json")
    assert response.status_code == 400
    assert "label 'Benign' is retired" in response.json()["labels"][0]
    assert SpanAnnotation.objects.filter(sample=sample).count() == 1
    source = "The council met on Monday."
    upload = faithbench_file([{
        "sample_id": 0, "source": source, "summary": "They met on Monday.",
        "annotations": [{"annot_id": 1, "annotator_id": "x", "annotator_name": "Ana", "label": ["Benign"],
                         "note": "", "summary_span": "They", "summary_start": 0, "summary_end": 4,
                         "source_span": None, "source_start": None, "source_end": None}],
        "metadata": {"summarizer": "m"},
    }])
    report = ingest.import_files(project, [("old.json", upload)])
    assert report.spans == 1


def test_the_app_refuses_the_misspelling_through_the_api(sample: Any, alice: Any) -> None:
    response = login(alice).post(
        "/api/spans/", {"sample": sample.pk, "start": 0, "end": 4, "labels": ["Unwanted.Instrinsic"]},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "misspelling accepted only from imported files" in response.json()["labels"][0]


# --------------------------------------------------------------------------- pages


def form_of(labels: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The editor's POST body: parallel lists, checkboxes carrying the row index, as a browser sends them."""
    fields = ("name", "category", "hotkey", "color", "description", "example")
    body: dict[str, Any] = {key: [str(label.get(key, "")) for label in labels] for key in fields}
    body["retired"] = [str(i) for i, label in enumerate(labels) if label.get("retired")]
    body["delete"] = [str(i) for i, label in enumerate(labels) if label.get("delete")]
    body.setdefault("guidelines", "")
    return body | extra


def blank() -> dict[str, str]:
    return dict.fromkeys(("name", "category", "hotkey", "color", "description", "example"), "")


def test_editor_shows_the_labels_and_history_to_admins(project: Project, admin_user: Any) -> None:
    response = login(admin_user).get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('name="name"') == 4 + 3  # four labels and three empty rows for new ones
    assert 'value="Unwanted.Intrinsic"' in html and "No saved versions yet" in html


def test_editor_saves_a_version_and_redirects(project: Project, admin_user: Any) -> None:
    labels = default_labels()
    labels[0]["color"] = "#c8412f"
    body = form_of([*labels, blank(), blank()], guidelines="Read the source first.\n\nThen the summary.",
                   note="first edit")
    client = login(admin_user)
    response = client.post(URL, body)
    assert response.status_code == 302 and response["Location"] == URL
    project.refresh_from_db()
    assert project.taxonomy["labels"][0]["color"] == "#c8412f"
    assert project.guidelines == "Read the source first.\n\nThen the summary."
    assert list(project.label_set_versions.values_list("number", "note")) == [(2, "first edit"), (1, labelsets.SEED_NOTE)]
    page = client.get(URL).content.decode()
    assert "Saved the label set and guidelines as version 2" in page and 'data-version="2"' in page


def test_editor_adds_retires_and_deletes_through_the_form(project: Project, admin_user: Any) -> None:
    labels = default_labels()
    labels[2]["retired"] = True
    labels[1]["delete"] = True
    new = blank() | {"name": "Benign.Style", "category": "B", "hotkey": "s", "description": "Wording"}
    assert login(admin_user).post(URL, form_of([*labels, new, blank()])).status_code == 302
    project.refresh_from_db()
    assert [(label["name"], label.get("retired", False)) for label in project.taxonomy["labels"]] == [
        ("Unwanted.Intrinsic", False), ("Questionable", True), ("Benign", False), ("Benign.Style", False)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"hotkey": "1"}, "label 4 (&#x27;Benign&#x27;): the hotkey &#x27;1&#x27; is already used by label 1"),
        ({"name": "Questionable"}, "label 4 (&#x27;Questionable&#x27;): the name is already used by label 3"),
        ({"color": "nope"}, "the colour &#x27;nope&#x27; is not a hex colour"),
        ({"name": ""}, "label 4: the name is empty"),
        ({"category": "C"}, "unknown category &#x27;C&#x27;"),
    ],
)
def test_editor_refuses_bad_input_and_saves_nothing(
    project: Project, admin_user: Any, change: dict[str, str], message: str
) -> None:
    labels = default_labels()
    labels[3].update(change)
    response = login(admin_user).post(URL, form_of(labels, guidelines="changed"))
    assert response.status_code == 400
    html = response.content.decode()
    assert "Nothing was saved" in html and message in html, html
    assert 'value="changed"' not in html and ">changed</textarea>" in html  # the admin's edit is kept on the form
    project.refresh_from_db()
    assert project.taxonomy == DEFAULT_TAXONOMY and project.guidelines == ""
    assert not LabelSetVersion.objects.exists()


def test_editor_refuses_to_delete_a_label_in_use(sample: Any, alice: Any, admin_user: Any) -> None:
    spans.create_span(sample, alice, round=1, start=0, end=4, labels=["Questionable"])
    labels = default_labels()
    labels[2]["delete"] = True
    response = login(admin_user).post(URL, form_of(labels))
    assert response.status_code == 400
    assert "label 3 (&#x27;Questionable&#x27;): used by 1 span of this project, so it cannot be deleted; " \
           "mark it retired instead" in response.content.decode()
    sample.project.refresh_from_db()
    assert sample.project.taxonomy == DEFAULT_TAXONOMY
    assert 'data-role="in-use">used by 1 span<' in login(admin_user).get(URL).content.decode()


def test_editor_htmx_variant(project: Project, admin_user: Any) -> None:
    labels = default_labels()
    bad = copy.deepcopy(labels)
    bad[0]["hotkey"] = "?"
    response = login(admin_user).post(URL, form_of(bad, guidelines="x"), **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and "<html" not in html and 'id="label-editor"' in html
    assert "already a shortcut of the annotation page" in html
    response = login(admin_user).post(URL, form_of(labels, guidelines="x"), **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == URL
    assert LabelSetVersion.objects.filter(project=project).count() == 2


def test_editor_shows_an_old_version_and_starts_an_edit_from_it(project: Project, admin_user: Any) -> None:
    labels = default_labels()
    labels[3]["description"] = "Changed wording."
    labelsets.save_label_set(project, labels, guidelines="Second <b>text</b>.", author=admin_user)
    client = login(admin_user)
    old = client.get(URL + "?version=1").content.decode()
    assert 'id="version" data-version="1"' in old and "Not in the source but true" in old
    new = client.get(URL + "?version=2").content.decode()
    assert "Second &lt;b&gt;text&lt;/b&gt;." in new and "Changed wording." in new
    prefilled = client.get(URL + "?edit_from=1").content.decode()
    assert 'value="from version 1"' in prefilled and "Changed wording." not in prefilled.split('id="label-editor"')[1]
    assert client.get(URL + "?version=9").status_code == 404
    assert client.get(URL + "?version=x").status_code == 404


def test_editor_is_for_admins_only(project: Project, alice: Any, charlie: Any, admin_user: Any) -> None:
    auditor = make_user("audrey")
    Membership.objects.create(project=project, user=auditor, role=Membership.Role.AUDITOR)
    assert login(alice).get(URL).status_code == 403
    assert login(auditor).post(URL, form_of(default_labels(), guidelines="x")).status_code == 403
    assert login(charlie).get(URL).status_code == 404
    assert login(admin_user).put(URL).status_code == 405
    assert login(admin_user).get("/projects/nope/labels/").status_code == 404
    assert not LabelSetVersion.objects.exists()


def test_guidelines_page_shows_colours_descriptions_and_retired_labels(project: Project, alice: Any,
                                                                        admin_user: Any) -> None:
    labels = default_labels()
    labels[0]["color"] = "#c8412f"
    labels[3]["retired"] = True
    labelsets.save_label_set(project, labels, guidelines="Be careful.\n\n<script>x</script>", author=admin_user)
    html = login(alice).get("/projects/demo/guidelines/").content.decode()
    assert 'style="background: #c8412f"' in html
    assert "Contradicts the source" in html and "Example: Source: eight weeks of repairs." in html
    assert "<p>Be careful.</p>" in html and "&lt;script&gt;x&lt;/script&gt;" in html
    assert 'data-role="retired" data-label="Benign"' in html
    assert '<dt data-label="Benign">' not in html


def test_annotation_page_offers_only_active_labels_with_colours(sample: Any, alice: Any, admin_user: Any) -> None:
    labels = default_labels()
    labels[1]["color"] = "#123456"
    labels[2]["retired"] = True
    labelsets.save_label_set(sample.project, labels, guidelines="", author=admin_user)
    html = login(alice).get(f"/projects/demo/samples/{sample.pk}/").content.decode()
    marker = '<script id="page-data" type="application/json">'
    start = html.index(marker) + len(marker)
    offered = json.loads(html[start : html.index("</script>", start)])["labels"]
    assert [(label["name"], label["color"]) for label in offered] == [
        ("Unwanted.Intrinsic", "#c93c3c"), ("Unwanted.Extrinsic", "#123456"), ("Benign", None)]
    # The label buttons' swatches take the label's own colour too.
    assert ('<span class="swatch" aria-hidden="true" style="background: #123456"></span>'
            '<span data-cue-label="Unwanted.Extrinsic">Unwanted.Extrinsic</span>') in html
