"""The label editor's refusals: every problem of one submission at once, each beside its row and field, worded
one way ("label N ('Name'): ..."), with the "used by N spans" hint still on the rows after a refusal.

Before, a rename of a label in use was reported only once the other rows' problems were fixed (two rounds), in
other words ("label 'X' is used by ..."), and only in the list above the form; the refused row lost its hint.
"""

from __future__ import annotations

import copy
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from annotate.models import LabelSetVersion, Sample, SpanAnnotation
from annotate.services import labelsets
from annotate.taxonomy import DEFAULT_TAXONOMY
from tests.conftest import login

pytestmark = pytest.mark.django_db

URL = "/projects/demo/labels/"
HTMX = {"HTTP_HX_REQUEST": "true"}
FIELDS = ("name", "category", "hotkey", "color", "description", "example")
# Every message, above the form and beside a row, names the label the same way.
WORDING = re.compile(r"^label (\d+ \('[^']*'\)|\d+|'[^']*'): \S")


class EditorPage(HTMLParser):
    """The editor as an admin sees it: the list above the form, and each row's messages, hint and hidden name."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.summary: list[str] = []
        self.rows: dict[int, dict[str, Any]] = {}
        self._row: int | None = None
        self._capture: tuple[str, str] | None = None  # (kind, field) of the element whose text is being read
        self._text = ""
        self._in_summary = False
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if found.get("data-role") == "errors":
            self._in_summary = True
        if tag == "tr" and found.get("data-row", "").isdigit():
            self._row = int(found["data-row"])
            self.rows[self._row] = {"errors": {}, "in_use": "", "was": None}
        if self._row is not None and tag == "input" and found.get("name") == "was":
            self.rows[self._row]["was"] = found.get("value", "")
        if self._row is not None and "field-error" in found.get("class", ""):
            self._capture, self._text = ("error", found["data-error"]), ""
        elif self._row is not None and found.get("data-role") == "in-use":
            self._capture, self._text = ("in_use", ""), ""
        elif self._in_summary and tag == "li":
            self._capture, self._text = ("summary", ""), ""

    def handle_data(self, data: str) -> None:
        if self._capture:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self._row = None
        if tag == "div" and self._in_summary and self._capture is None:
            self._in_summary = False
        if self._capture and tag in ("span", "li"):
            kind, field = self._capture
            text = " ".join(self._text.split())
            if kind == "error" and self._row is not None:
                self.rows[self._row]["errors"].setdefault(field, []).append(text)
            elif kind == "in_use" and self._row is not None:
                self.rows[self._row]["in_use"] = text
            elif kind == "summary":
                self.summary.append(text)
            self._capture = None


def editor(response: Any) -> EditorPage:
    return EditorPage(response.content.decode())


def default_labels() -> list[dict[str, Any]]:
    return copy.deepcopy(DEFAULT_TAXONOMY["labels"])


def form_of(labels: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The POST body as the editor's form sends it: parallel lists, ``was`` (each row's name when the editor
    opened), checkboxes carrying the row index."""
    body: dict[str, Any] = {key: [str(label.get(key, "")) for label in labels] for key in FIELDS}
    body["was"] = [str(label.get("was", "")) for label in labels]
    body["retired"] = [str(i) for i, label in enumerate(labels) if label.get("retired")]
    body["delete"] = [str(i) for i, label in enumerate(labels) if label.get("delete")]
    return body | {"guidelines": "", "note": ""} | extra


def opened_rows() -> list[dict[str, Any]]:
    """The default labels as the editor shows them: each row carries its name as ``was``."""
    return [label | {"was": label["name"]} for label in default_labels()]


def spans_with(sample: Sample, user: Any, label: str, count: int) -> None:
    for start in range(count):
        SpanAnnotation.objects.create(sample=sample, annotator=user, start=start, end=start + 1,
                                      text=sample.summary[start], labels=[label])


def test_the_editor_carries_each_rows_name_as_it_opened(project: Any, admin_user: Any) -> None:
    page = editor(login(admin_user).get(URL))
    assert [page.rows[number]["was"] for number in sorted(page.rows)] == [
        "Unwanted.Intrinsic", "Unwanted.Extrinsic", "Questionable", "Benign", "", "", ""]


def test_a_rename_in_use_and_a_bad_new_row_are_refused_together_each_beside_its_field(
    sample: Sample, alice: Any, admin_user: Any
) -> None:
    spans_with(sample, alice, "Benign", 3)
    rows = opened_rows()
    rows[3]["name"] = "Harmless"  # row 4, used by 3 spans
    new = {"name": "Style", "category": "B", "hotkey": "d", "color": "red", "description": "", "example": ""}
    response = login(admin_user).post(URL, form_of([*rows, new]))
    assert response.status_code == 400
    page = editor(response)

    # All three problems in the one answer, each beside its own row and field.
    renamed, added = page.rows[4]["errors"], page.rows[5]["errors"]
    assert list(renamed) == ["name"] and "renamed from 'Benign', which is used by 3 spans" in renamed["name"][0]
    assert sorted(added) == ["color", "hotkey"]
    assert "the hotkey 'd' is already a shortcut of the annotation page" in added["hotkey"][0]
    assert "the colour 'red' is not a hex colour" in added["color"][0]
    assert not any(page.rows[number]["errors"] for number in (1, 2, 3))

    # The list above the form has them too, in row order, in one wording.
    assert len(page.summary) == 3
    assert page.summary[0].startswith("label 4 ('Harmless'): renamed from 'Benign'")
    assert all(line.startswith("label 5 ('Style'): ") for line in page.summary[1:])
    assert all(WORDING.match(line) for line in page.summary), page.summary

    # The hint stays on the refused row, and the row still carries the name it had.
    assert page.rows[4]["in_use"] == "Benign: used by 3 spans"
    assert page.rows[4]["was"] == "Benign"
    assert not LabelSetVersion.objects.exists()


def test_a_deleted_row_in_use_is_refused_on_that_row_beside_delete(sample: Sample, alice: Any, admin_user: Any) -> None:
    spans_with(sample, alice, "Questionable", 2)
    rows = opened_rows()
    rows[2]["delete"] = True
    rows[0]["color"] = "blue"
    response = login(admin_user).post(URL, form_of(rows), **HTMX)
    assert response.status_code == 400
    page = editor(response)
    assert page.rows[3]["errors"] == {
        "delete": ["used by 2 spans of this project, so it cannot be deleted; mark it retired instead"]}
    assert list(page.rows[1]["errors"]) == ["color"]
    assert page.rows[3]["in_use"] == "used by 2 spans"
    assert [line.split(":")[0] for line in page.summary] == ["label 1 ('Unwanted.Intrinsic')", "label 3 ('Questionable')"]


def test_a_category_change_in_use_is_refused_beside_the_category_with_the_rows_other_problems(
    sample: Sample, alice: Any, admin_user: Any
) -> None:
    spans_with(sample, alice, "Benign", 1)
    rows = opened_rows()
    rows[3]["category"] = "Q"
    rows[3]["hotkey"] = "1"
    page = editor(login(admin_user).post(URL, form_of(rows)))
    assert page.rows[4]["errors"]["category"] == [
        "used by 1 span of this project, so its category cannot change from B to Q; retire it and add a new label "
        "instead"]
    assert page.rows[4]["errors"]["hotkey"] == ["the hotkey '1' is already used by label 1 ('Unwanted.Intrinsic')"]


def test_long_guidelines_are_reported_with_the_label_problems(project: Any, admin_user: Any) -> None:
    rows = opened_rows()
    rows[1]["hotkey"] = ""
    body = form_of(rows, guidelines="g" * (labelsets.MAX_GUIDELINES + 1))
    response = login(admin_user).post(URL, body)
    page = editor(response)
    assert page.rows[2]["errors"] == {"hotkey": ["give it a hotkey (a single character)"]}
    too_long = f"the guidelines are {labelsets.MAX_GUIDELINES + 1} characters long; at most {labelsets.MAX_GUIDELINES}"
    assert len(page.summary) == 2 and page.summary[1].startswith(too_long)
    assert f'<span class="field-error" data-error="guidelines">{too_long}' in response.content.decode()


def test_the_service_names_every_problem_by_row_and_field(sample: Sample, alice: Any, admin_user: Any) -> None:
    spans_with(sample, alice, "Benign", 3)
    labels = [label | {"row": number} for number, label in enumerate(opened_rows(), start=1)]
    labels[3]["name"] = "Harmless"
    labels.append({"name": "Style", "category": "B", "hotkey": "d", "color": "red", "row": 5})
    with pytest.raises(labelsets.LabelSetError) as caught:
        labelsets.save_label_set(sample.project, labels, guidelines="", author=admin_user)
    assert [(problem.row, problem.field) for problem in caught.value.details] == [
        (4, "name"), (5, "hotkey"), (5, "color")]
    assert all(WORDING.match(text) for text in caught.value.problems)
