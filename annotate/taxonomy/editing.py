"""Editing a label set: each label checked (name, category, hotkey, colour, texts), then the set as a whole
(repeated names and hotkeys, one category per parent, labels in use kept), every problem at once as LabelProblems
in a LabelSetError. Pure: no Django imports."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from annotate.taxonomy.labels import ALIASES, label_categories, parent_of
from annotate.taxonomy.severity import BENIGN, QUESTIONABLE, UNWANTED

# Categories a label can have; C is what no span means, so no label is Consistent.
LABEL_CATEGORIES: tuple[str, ...] = (UNWANTED, QUESTIONABLE, BENIGN)
# Keys the annotation page already answers (static/annotate/keys.js); a label hotkey would shadow them.
RESERVED_HOTKEYS = frozenset("?[]pnlLeEdD")
MAX_NAME = 100
MAX_TEXT = 2000
_COLOR = re.compile(r"#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_ENTRY_KEYS = ("name", "category", "hotkey", "color", "description", "example")


@dataclass(frozen=True)
class LabelProblem:
    """One reason a label set cannot be saved, and where: the label's row and name (neither: the whole set) and the
    field at fault (None: the label as a whole), so an editor can show it beside that field.

    Every problem reads the same way, ``<where>: <what>``: "label 4 ('Benign'): the colour 'red' is not a hex
    colour", "label 'Unwanted': used by 5 spans ..." (a name without a row: the label is in no row of the edit).
    """

    text: str
    row: int | None = None
    name: str = ""
    field: str | None = None

    @property
    def where(self) -> str:
        return _where(self.row, self.name)

    def __str__(self) -> str:
        return f"{self.where}: {self.text}" if self.where else self.text


class LabelSetError(ValueError):
    """A label set that cannot be saved; ``problems`` lists every reason as text, each naming the label, and
    ``details`` the same reasons as LabelProblems (row and field)."""

    def __init__(self, problems: Sequence[str | LabelProblem]) -> None:
        self.details = [problem if isinstance(problem, LabelProblem) else LabelProblem(problem) for problem in problems]
        self.problems = [str(problem) for problem in self.details]
        super().__init__("; ".join(self.problems))


def is_hex_color(value: Any) -> bool:
    return isinstance(value, str) and _COLOR.fullmatch(value) is not None


def _where(number: int | None, name: str) -> str:
    """How a message names a label: its row and name, its row alone (no name yet), its name alone (in no row)."""
    if number is None:
        return f"label {name!r}" if name else ""
    return f"label {number} ({name!r})" if name else f"label {number}"


def _text(entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    if value is None:
        return ""
    return value.strip() if isinstance(value, str) else None


def _check_entry(number: int, entry: Any) -> tuple[dict[str, Any] | None, list[LabelProblem]]:
    """One label as saved, or None, and what is wrong with it."""
    if not isinstance(entry, Mapping):
        return None, [LabelProblem("must be an object with a name and a category", number)]
    values = {key: _text(entry, key) for key in _ENTRY_KEYS}
    name = values["name"] if isinstance(values["name"], str) else ""

    def problem(text: str, field: str | None) -> LabelProblem:
        return LabelProblem(text, number, name, field)

    problems = [problem(f"{key} must be text", key) for key, value in values.items() if value is None]
    if problems:
        return None, problems
    retired = entry.get("retired", False)
    if not isinstance(retired, bool):
        problems.append(problem("retired must be true or false", "retired"))
    if not name:
        problems.append(problem("the name is empty", "name"))
    elif len(name) > MAX_NAME:
        problems.append(problem(f"the name is longer than {MAX_NAME} characters", "name"))
    elif "|" in name or "" in name.split("."):
        problems.append(problem("a name cannot contain '|' or an empty part between dots", "name"))
    elif name in ALIASES:
        problems.append(problem(f"this misspelling is read from old imports only; use {ALIASES[name]!r}", "name"))
    category = values["category"]
    if category not in LABEL_CATEGORIES:
        problems.append(problem(
            f"unknown category {category!r}; choose U (Unwanted), Q (Questionable) or B (Benign)", "category"))
    elif name.startswith("Unwanted") and category != UNWANTED:
        # category_of counts every label beginning with Unwanted as U, whatever the taxonomy says.
        problems.append(problem("names beginning with 'Unwanted' always count as Unwanted; choose category U",
                                "category"))
    hotkey = values["hotkey"]
    if len(hotkey) > 1:
        problems.append(problem(f"the hotkey {hotkey!r} must be a single character", "hotkey"))
    elif hotkey in RESERVED_HOTKEYS:
        problems.append(problem(f"the hotkey {hotkey!r} is already a shortcut of the annotation page", "hotkey"))
    elif not hotkey and not retired:
        problems.append(problem("give it a hotkey (a single character)", "hotkey"))
    color = values["color"]
    if color and not is_hex_color(color):
        problems.append(problem(f"the colour {color!r} is not a hex colour such as #c8412f", "color"))
    for key in ("description", "example"):
        if len(values[key]) > MAX_TEXT:
            problems.append(problem(f"the {key} is longer than {MAX_TEXT} characters", key))
    saved: dict[str, Any] = {"name": name, "category": category, "hotkey": hotkey}
    if color:
        saved["color"] = color.lower()
    saved |= {"description": values["description"], "example": values["example"]}
    if retired is True:
        saved["retired"] = True
    return saved, problems


def check_label_set(
    entries: Sequence[Any],
    *,
    previous: Mapping[str, Any],
    in_use: Mapping[str, int],
    removed: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """The taxonomy to save from the edited labels, or LabelSetError listing every problem at once.

    ``entries`` are the labels in order, each ``{name, category, hotkey, color,
    description, example, retired}`` and optionally ``row``, its number in
    messages (else its place, from 1), and ``was``, the name the row had when
    the editor opened (so a rename of a label in use is named on its row);
    ``previous`` is the taxonomy being replaced, ``in_use`` how many spans use
    each label name, ``removed`` the names of the rows an editor deleted -> their
    row numbers. A label in use must stay known (retired is fine) with the
    same category: existing spans, agreement and exports depend on it.
    """
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        raise LabelSetError(["labels must be a list"])
    saved: list[dict[str, Any]] = []
    problems: list[LabelProblem] = []
    for index, entry in enumerate(entries, start=1):
        # A form may number its rows itself (``row``), so messages point at the row the admin sees.
        row = entry.get("row") if isinstance(entry, Mapping) else None
        number = row if isinstance(row, int) and not isinstance(row, bool) else index
        label, found = _check_entry(number, entry)
        problems += found
        if label is not None:
            was = entry.get("was")
            saved.append({**label, "_number": number, "_was": was.strip() if isinstance(was, str) else ""})
    problems += _repeat_problems(saved)
    if not entries:
        problems.append(LabelProblem("the label set is empty; add at least one label"))
    elif saved and all(label.get("retired") for label in saved):
        problems.append(LabelProblem("keep at least one label that is not retired, or nothing can be annotated"))
    problems += _family_problems(saved)
    taxonomy = {**previous, "labels": [{k: v for k, v in label.items() if not k.startswith("_")} for label in saved]}
    if len(saved) == len(entries):
        # Checked with the rest, so one submission shows every problem; skipped only when an entry could not be
        # read at all, as its name is unknown and a label in use would look deleted.
        problems += _in_use_problems(saved, previous, in_use, removed or {})
    if problems:
        # Row by row, as the editor lists them; the problems of the whole set after.
        problems.sort(key=lambda problem: (problem.row is None, problem.row or 0))
        raise LabelSetError(problems)
    return taxonomy


def _repeat_problems(labels: list[dict[str, Any]]) -> list[LabelProblem]:
    """Names are unique, and so are the hotkeys of the labels not retired."""
    first_of_name: dict[str, dict[str, Any]] = {}
    first_of_hotkey: dict[str, dict[str, Any]] = {}
    problems = []
    for label in labels:
        other = first_of_name.setdefault(label["name"], label)
        if label["name"] and other is not label:
            problems.append(LabelProblem(f"the name is already used by label {other['_number']}",
                                         label["_number"], label["name"], "name"))
        if label["hotkey"] and not label.get("retired"):
            other = first_of_hotkey.setdefault(label["hotkey"], label)
            if other is not label:
                problems.append(LabelProblem(
                    f"the hotkey {label['hotkey']!r} is already used by {_where(other['_number'], other['name'])}",
                    label["_number"], label["name"], "hotkey",
                ))
    return problems


def _family_problems(labels: list[dict[str, Any]]) -> list[LabelProblem]:
    """A parent name must mean one category, since spans may carry the parent alone."""
    category_of_name: dict[str, tuple[str, dict[str, Any]]] = {}
    problems = []
    for label in labels:
        if label["category"] not in LABEL_CATEGORIES or not label["name"]:
            continue
        names = [label["name"]]
        parent = parent_of(label["name"])
        while parent:
            names.append(parent)
            parent = parent_of(parent)
        for name in names:
            category, first = category_of_name.setdefault(name, (label["category"], label))
            if category != label["category"] and first["name"] != label["name"]:
                problems.append(LabelProblem(
                    f"category {label['category']}, but {_where(first['_number'], first['name'])} has {category} "
                    f"and both come under {name!r}, which can have only one category",
                    label["_number"], label["name"], "category",
                ))
                break
    return problems


def _spans(count: int) -> str:
    return f"{count} span{'s' if count != 1 else ''}"


def _in_use_problems(
    labels: list[dict[str, Any]], previous: Mapping[str, Any], in_use: Mapping[str, int], removed: Mapping[str, int]
) -> list[LabelProblem]:
    """Labels in use that the edit deletes, renames or moves to another category, each named on its row when the
    edit says which (``_was``: the row's name before; ``removed``: the deleted rows), else by its name alone."""
    before = label_categories(previous)
    after = label_categories({"labels": labels})
    renamed = {label["_was"]: label for label in labels if label["_was"] and label["_was"] != label["name"]}
    row_of = {label["name"]: label for label in labels}
    problems = []
    for name, count in sorted(in_use.items()):
        if name not in before or count <= 0:
            continue  # unknown already: nothing this edit could keep
        spans = _spans(count)
        if name not in after:
            if name in renamed:
                label = renamed[name]
                problems.append(LabelProblem(
                    f"renamed from {name!r}, which is used by {spans} of this project; keep the name {name!r} and "
                    "mark it retired instead (add the new name as a new label)",
                    label["_number"], label["name"], "name",
                ))
            elif name in removed:
                problems.append(LabelProblem(
                    f"used by {spans} of this project, so it cannot be deleted; mark it retired instead",
                    removed[name], name, "delete",
                ))
            else:
                problems.append(LabelProblem(
                    f"used by {spans} of this project, so it cannot be deleted or renamed; mark it retired instead",
                    name=name,
                ))
        elif after[name] != before[name] and after[name] in LABEL_CATEGORIES and not name.startswith("Unwanted"):
            label = row_of.get(name)
            problems.append(LabelProblem(
                f"used by {spans} of this project, so its category cannot change from {before[name]} to "
                f"{after[name]}; retire it and add a new label instead",
                label["_number"] if label else None, name, "category",
            ))
    return problems
