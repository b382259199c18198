"""A project's prompts, versioned: the current version of each kind (the default text made on first use), and
saving an edited one as the next version (PromptRefused when it cannot be used)."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from annotate.models import Project
from judging import prompts
from judging.models import PromptVersion


class PromptRefused(Exception):
    """An edited prompt that cannot be saved (e.g. a rubric without a 1-5 scale); the message says why."""



def current_prompt(project: Project, kind: str) -> PromptVersion:
    """The latest version of a prompt of the project; version 1 is the default text, made on first use."""
    if kind not in PromptVersion.Kind.values:
        raise PromptRefused(f"Unknown prompt kind {kind!r}: expected one of {', '.join(PromptVersion.Kind.values)}.")
    latest = PromptVersion.objects.filter(project=project, kind=kind).order_by("-number").first()
    if latest is not None:
        return latest
    try:
        with transaction.atomic():
            return PromptVersion.objects.create(
                project=project, kind=kind, number=1, text=prompts.default_prompt(kind), note="default"
            )
    except IntegrityError:  # made by a concurrent first use
        return PromptVersion.objects.filter(project=project, kind=kind).order_by("-number").first()


def _normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").strip().split("\n"))


def save_prompt(project: Project, kind: str, text: str, *, by: Any = None, note: str = "") -> PromptVersion:
    """Save an edited prompt as the next version; the same text again makes no new version.

    A rubric must define the 1-5 scale, a rewrite prompt must hold its placeholders
    (judging.prompts); otherwise PromptRefused says what is missing, and nothing is
    written: not even version 1, the default text that the first save otherwise
    records before the edited one.
    """
    if kind not in PromptVersion.Kind.values:
        raise PromptRefused(f"Unknown prompt kind {kind!r}: expected one of {', '.join(PromptVersion.Kind.values)}.")
    cleaned = _normalised(str(text or ""))
    problems = prompts.rubric_problems(cleaned) if kind == "rubric" else prompts.rewrite_prompt_problems(cleaned)
    if problems:
        said = "; ".join(problems)
        # Only the first letter: capitalize() would lower the rest, the quoted lines of the text included.
        raise PromptRefused(said[:1].upper() + said[1:] + ".")
    current = current_prompt(project, kind)
    if cleaned == _normalised(current.text):
        return current
    with transaction.atomic():
        number = (
            PromptVersion.objects.select_for_update().filter(project=project, kind=kind).order_by("-number").first()
        ).number + 1
        return PromptVersion.objects.create(
            project=project, kind=kind, number=number, text=cleaned, note=str(note or "")[:300], created_by=by
        )
