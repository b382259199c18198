"""A project's label set and guidelines: edits saved as numbered versions, labels in use kept.

The project row holds the newest label set (``Project.taxonomy``,
``Project.guidelines``); every save adds a ``LabelSetVersion`` with the whole
taxonomy. Projects made before versions existed get version 1, their label set
as it stood, on their first save. The rules for a valid label set are the pure
``annotate.taxonomy.check_label_set``.

Two admins may edit at once. A save names the version its form was opened at
(``base_version``); when another admin saved a newer one meanwhile, the save is
refused (``LabelSetConflict``) rather than becoming the next version and
silently dropping the other admin's changes. The check runs under the
project's row lock, like the save.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from annotate.models import GoldLabel, LabelSetVersion, Project, SpanAnnotation
from annotate.taxonomy import LabelProblem, LabelSetError, check_label_set, parent_of

MAX_GUIDELINES = 50_000
MAX_NOTE = LabelSetVersion._meta.get_field("note").max_length or 300
SEED_NOTE = "the label set before its first edit here"
GUIDELINES_SEED_NOTE = "the guidelines before their first edit here"

__all__ = [
    "LabelProblem",
    "LabelSetConflict",
    "LabelSetError",
    "current_version_number",
    "labels_in_use",
    "label_set_history",
    "save_guidelines",
    "save_label_set",
]


class LabelSetConflict(LabelSetError):
    """A save from a version that is no longer the current one; ``current`` is the version saved meanwhile."""

    def __init__(self, message: str, current: LabelSetVersion) -> None:
        super().__init__([message])
        self.current = current


def _with_parents(labels: list[Any]) -> set[str]:
    names = set()
    for label in labels:
        if not isinstance(label, str):
            continue
        while label:
            names.add(label)
            label = parent_of(label)
    return names


def labels_in_use(project: Project) -> Counter[str]:
    """Label name -> how many spans of the project (any round, gold spans too) carry it or a child of it.

    A child implies its parent, so ``["Unwanted.Extrinsic"]`` alone counts for
    ``Unwanted`` as well. Label lists are grouped by their JSON text: a project
    has few distinct ones.
    """
    counts: Counter[str] = Counter()
    grouped = (
        SpanAnnotation.objects.filter(sample__project=project)
        .annotate(labels_text=Cast("labels", TextField()))
        .values("labels_text")
        .annotate(spans=Count("id"))
        .order_by()
    )
    for row in grouped:
        labels = json.loads(row["labels_text"]) if row["labels_text"] else []
        for name in _with_parents(labels if isinstance(labels, list) else []):
            counts[name] += row["spans"]
    for gold_spans in GoldLabel.objects.filter(sample__project=project).values_list("spans", flat=True):
        for span in gold_spans or []:
            labels = span.get("labels") if isinstance(span, dict) else None
            for name in _with_parents(labels if isinstance(labels, list) else []):
                counts[name] += 1
    return counts


def label_set_history(project: Project) -> list[LabelSetVersion]:
    return list(project.label_set_versions.select_related("created_by").order_by("-number"))


def current_version_number(project: Project) -> int:
    """The version an edit starts from: the newest saved one, or 1 (what the first save keeps as version 1)."""
    return project.label_set_versions.order_by("-number").values_list("number", flat=True).first() or 1


def _check_base(project: Project, base_version: Any) -> None:
    """Refuse a save whose form was opened at another version than the current one (None: not checked).

    Called with the project row locked, so a save that passes is the next version, not one after a version its
    author never saw.
    """
    if base_version is None:
        return
    current = project.label_set_versions.select_related("created_by").order_by("-number").first()
    number = current.number if current else 1
    if isinstance(base_version, bool) or not isinstance(base_version, int) or not 1 <= base_version <= number:
        raise LabelSetError([f"base_version {base_version!r} is not a version of this project's label set (the "
                             f"current one is version {number}); reload the editor"])
    if base_version == number or current is None:
        return
    between = number - base_version - 1
    before = "" if not between else (
        f"; version {base_version + 1} came before it" if between == 1
        else f"; versions {base_version + 1} to {number - 1} came before it")
    author = f" by {current.created_by.get_username()}" if current.created_by else ""
    raise LabelSetConflict(
        f"Version {number} was saved{author} at {timezone.localtime(current.created_at):%Y-%m-%d %H:%M} while you "
        f"edited (from version {base_version}{before}); your changes are below, not saved: compare with version "
        f"{number} and save again.",
        current,
    )


def _clean_text(value: Any, field: str, limit: int, problems: list[LabelProblem]) -> str:
    """The text as saved; what is wrong with it goes into ``problems`` (shown beside the field), so a save
    reports it with the label set's own problems rather than before them."""
    if value is None:
        return ""
    subject = f"the {field} {'are' if field.endswith('s') else 'is'}"  # "the guidelines are", "the note is"
    if not isinstance(value, str):
        problems.append(LabelProblem(f"{subject} not text", field=field))
        return ""
    text = value.replace("\r\n", "\n").replace("\r", "\n").strip()
    if len(text) > limit:
        problems.append(LabelProblem(f"{subject} {len(text)} characters long; at most {limit} are kept", field=field))
    return text


@transaction.atomic
def save_label_set(
    project: Project,
    labels: list[Any],
    *,
    guidelines: Any,
    note: Any = "",
    author: AbstractBaseUser | None = None,
    base_version: Any = None,
    removed: dict[str, int] | None = None,
) -> LabelSetVersion:
    """Save a new label set and guidelines as the next version; LabelSetError (nothing saved) when invalid, with
    every problem of the submission at once.

    Labels used by spans of the project cannot be deleted, renamed or moved to
    another category, only retired. Saving what is already current is refused,
    so every version is a change. ``base_version``, the version the editor was
    opened at, makes a save refused (LabelSetConflict) once a newer version
    exists; None skips the check (scripts that own the project). ``removed``:
    the names of the rows the editor deleted -> their row numbers, for messages
    (see ``check_label_set``).
    """
    # FOR UPDATE (not NO KEY UPDATE): span writes hold this row FOR KEY SHARE while they check their labels
    # (annotate.services.spans), so the labels in use are counted after the saves in flight are stored, and a save
    # that comes later checks its labels against this version.
    project = Project.objects.select_for_update().get(pk=project.pk)
    _check_base(project, base_version)
    problems: list[LabelProblem] = []
    guidelines = _clean_text(guidelines, "guidelines", MAX_GUIDELINES, problems)
    note = _clean_text(note, "note", MAX_NOTE, problems)
    try:
        taxonomy = check_label_set(labels, previous=project.taxonomy or {}, in_use=labels_in_use(project),
                                   removed=removed)
    except LabelSetError as error:
        raise LabelSetError([*error.details, *problems]) from None
    if problems:
        raise LabelSetError(problems)
    return _add_version(project, taxonomy, guidelines, note, author,
                        subject="label set", edited="a label or the guidelines")


@transaction.atomic
def save_guidelines(
    project: Project, *, guidelines: Any, note: Any = "", author: AbstractBaseUser | None = None,
    base_version: Any = None,
) -> LabelSetVersion:
    """Save new guidelines as the next version, the label set kept as it is; LabelSetError (nothing saved) when invalid.

    For pairs projects, whose answers are fixed (H, N, ?) and whose label set
    is not used: their guidelines are versioned like a span project's, with the
    same ``base_version`` check as ``save_label_set``.
    """
    project = Project.objects.select_for_update().get(pk=project.pk)
    _check_base(project, base_version)
    problems: list[LabelProblem] = []
    guidelines = _clean_text(guidelines, "guidelines", MAX_GUIDELINES, problems)
    note = _clean_text(note, "note", MAX_NOTE, problems)
    if problems:
        raise LabelSetError(problems)
    return _add_version(project, project.taxonomy, guidelines, note, author,
                        subject="guidelines", edited="the guidelines")


def _add_version(
    project: Project, taxonomy: Any, guidelines: str, note: str, author: AbstractBaseUser | None, *,
    subject: str, edited: str,
) -> LabelSetVersion:
    """The next version of the locked project, refused when nothing changed; version 1 seeded when missing."""
    latest = project.label_set_versions.order_by("-number").first()
    if taxonomy == project.taxonomy and guidelines == project.guidelines:
        current = f"version {latest.number}" if latest else f"the current {subject}"
        raise LabelSetError([f"nothing changed since {current}; edit {edited} first"])
    if latest is None:
        latest = LabelSetVersion.objects.create(
            project=project, number=1, taxonomy=project.taxonomy, guidelines=project.guidelines,
            note=GUIDELINES_SEED_NOTE if subject == "guidelines" else SEED_NOTE,
        )
    version = LabelSetVersion.objects.create(
        project=project, number=latest.number + 1, taxonomy=taxonomy, guidelines=guidelines, note=note,
        created_by=author,
    )
    project.taxonomy, project.guidelines = taxonomy, guidelines
    project.save(update_fields=["taxonomy", "guidelines"])
    return version
