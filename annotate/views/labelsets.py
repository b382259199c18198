"""The label set and guidelines editor of a project (admins), with its version history.

A pairs project's answers are fixed (H, N, ?), so for one the page edits the guidelines only.

The form carries the version it was opened at (``base_version``, hidden): a save after another admin saved a newer
version is refused with the edit kept on the form. Editing from an old version (``?edit_from=N``, a restore) is
based on the current version, not on N: the save is meant to replace the current version, and what it must not
drop silently is a version saved while the admin was restoring.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods
from django_htmx.http import HttpResponseClientRedirect

from annotate import access
from annotate.models import LabelSetVersion, Project
from annotate.services import labelsets
from annotate.services.pairs.guidelines import DEFAULT_PAIR_GUIDELINES
from annotate.taxonomy import CATEGORY_NAMES, LABEL_CATEGORIES, is_hex_color

TEXT_FIELDS = ("name", "category", "hotkey", "color", "description", "example")
BLANK_ROWS = 3  # empty rows under the labels, for new ones


def _version(project: Project, raw: str) -> LabelSetVersion:
    version = project.label_set_versions.filter(number=int(raw)).first() if raw.isdigit() else None
    if version is None:
        raise Http404(f"No label set version {raw}")
    return version


def _editor_rows(labels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The editor's rows: each label with the name it has now as ``was`` (a hidden field), then empty rows."""
    rows = [{key: label.get(key) or "" for key in TEXT_FIELDS}
            | {"retired": bool(label.get("retired")), "was": label.get("name") or ""}
            for label in labels]
    return rows + [dict.fromkeys(TEXT_FIELDS, "") | {"retired": False, "was": ""} for _ in range(BLANK_ROWS)]


def _submitted_rows(post: QueryDict) -> list[dict[str, Any]]:
    """The form's rows as posted: parallel lists of text fields (and ``was``, the name a row had when the editor
    opened), checkboxes carrying their row's index."""
    columns = {key: post.getlist(key) for key in (*TEXT_FIELDS, "was")}
    retired, deleted = set(post.getlist("retired")), set(post.getlist("delete"))
    rows = []
    for index in range(max(len(values) for values in columns.values())):
        row: dict[str, Any] = {key: values[index] if index < len(values) else "" for key, values in columns.items()}
        rows.append(row | {"retired": str(index) in retired, "deleted": str(index) in deleted})
    return rows


def _row_name(row: dict[str, Any]) -> str:
    """The name a row's label is known by in the project: the one it had when the editor opened, else the typed one."""
    return str(row.get("was", "")).strip() or str(row["name"]).strip()


def _problems_by_row(problems: list[labelsets.LabelProblem]) -> dict[int, dict[str, list[str]]]:
    """Row number -> field -> what is wrong there (``label`` for the row as a whole), to show beside the field."""
    by_row: dict[int, dict[str, list[str]]] = {}
    for problem in problems:
        if problem.row is not None:
            by_row.setdefault(problem.row, {}).setdefault(problem.field or "label", []).append(problem.text)
    return by_row


def _is_blank(row: dict[str, Any]) -> bool:
    return not any(str(row[key]).strip() for key in TEXT_FIELDS) and not row["retired"]


def _posted_base(post: QueryDict) -> int | str | None:
    """The version the form was opened at: a number, the raw text when it is not one (the service names it), or
    None for a form without the field (no check)."""
    raw = post.get("base_version")
    if raw is None:
        return None
    return int(raw) if raw.isascii() and raw.isdigit() else raw


@require_http_methods(["GET", "POST"])
@login_required
def label_set(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.get_project_for_user(request.user, slug, admin=True)
    shown = _version(project, request.GET["version"]) if "version" in request.GET else None
    guidelines_only = project.kind == Project.Kind.PAIRS
    errors: list[labelsets.LabelProblem] = []
    conflict: LabelSetVersion | None = None
    if request.method == "POST":
        guidelines, note = request.POST.get("guidelines", ""), request.POST.get("note", "")
        rows = [] if guidelines_only else _submitted_rows(request.POST)
        base = _posted_base(request.POST)
        try:
            if guidelines_only:
                version = labelsets.save_guidelines(project, guidelines=guidelines, note=note, author=request.user,
                                                    base_version=base)
            else:
                labels = [
                    {key: row[key] for key in TEXT_FIELDS}
                    | {"retired": row["retired"], "row": number, "was": row["was"].strip()}
                    for number, row in enumerate(rows, start=1)
                    if not row["deleted"] and not _is_blank(row)
                ]
                # A deleted row that held a label in use is refused on that row, not by the label's name alone.
                removed = {_row_name(row): number for number, row in enumerate(rows, start=1)
                           if row["deleted"] and _row_name(row)}
                version = labelsets.save_label_set(
                    project, labels, guidelines=guidelines, note=note, author=request.user,
                    base_version=base, removed=removed,
                )
        except labelsets.LabelSetConflict as error:
            # The edit stays on the form, now based on the version saved meanwhile: saving again is a decision.
            errors, conflict, base = error.details, error.current, error.current.number
        except labelsets.LabelSetError as error:
            errors = error.details
        else:
            saved = "the guidelines" if guidelines_only else "the label set and guidelines"
            messages.success(request, f"Saved {saved} as version {version.number}.")
            url = reverse("label-set", args=[project.slug])
            return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
    else:
        start = _version(project, request.GET["edit_from"]) if "edit_from" in request.GET else None
        taxonomy = start.taxonomy if start else project.taxonomy
        rows = [] if guidelines_only else _editor_rows(list((taxonomy or {}).get("labels", [])))
        guidelines, note = (start.guidelines if start else project.guidelines), ""
        if start:
            note = f"from version {start.number}"
        # The current version even when starting from an old one (see the module's docstring).
        base = labelsets.current_version_number(project)
    in_use = labelsets.labels_in_use(project) if rows else {}
    row_problems = _problems_by_row(errors)
    context = {
        "project": project,
        "guidelines_only": guidelines_only,
        # What judges read while a pairs project's own guidelines are blank.
        "default_guidelines": DEFAULT_PAIR_GUIDELINES if guidelines_only else "",
        "rows": [
            # The hint counts the spans of the name the row had: a rename refused keeps it, beside its message.
            row | {"index": index, "number": index + 1, "in_use": in_use.get(_row_name(row), 0),
                   "errors": row_problems.get(index + 1, {}),
                   "swatch": row["color"].strip() if is_hex_color(row["color"].strip()) else ""}
            for index, row in enumerate(rows)
        ],
        "field_errors": {
            field: [problem.text for problem in errors if problem.row is None and problem.field == field]
            for field in ("guidelines", "note")
        },
        "guidelines": guidelines,
        "note": note,
        "errors": errors,
        "conflict": conflict,
        "base_version": base,
        "history": labelsets.label_set_history(project),
        "shown": shown,
        "categories": [(code, CATEGORY_NAMES[code]) for code in LABEL_CATEGORIES],
    }
    template = "annotate/labels.html#editor" if request.htmx else "annotate/labels.html"
    return render(request, template, context, status=400 if errors else 200)
