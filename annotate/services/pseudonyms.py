"""Project-wide pseudonyms: "Annotator A", "Annotator B", ... the same person the same letter everywhere.

The round-2 page (when names are hidden) and exports with pseudonyms read the
same ``Pseudonym`` rows, so "Annotator C" on the page is "Annotator C" in the
file. A user gets a letter the first time one is needed, the next free one
in the project; users who need one in the same call get theirs in username
order. Letters never come from database ids, which would leak who joined
first and differ between page and export.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from annotate.models import Project, Pseudonym

# Another request may take the letter this one chose; each retry reads the letters again.
ATTEMPTS = 20


def pseudonym_label(index: int) -> str:
    """The index-th pseudonym (from 0): "Annotator A" .. "Annotator Z", then "Annotator 27", ..."""
    if index < 26:
        return f"Annotator {chr(ord('A') + index)}"
    return f"Annotator {index + 1}"


def _next_free(taken: set[str]) -> str:
    index = 0
    while pseudonym_label(index) in taken:
        index += 1
    return pseudonym_label(index)


def _give_pseudonym(project: Project, user_id: int) -> str:
    """The user's pseudonym in the project, made now if they have none.

    Safe under concurrency: the unique constraints decide. If another request
    gave this user a pseudonym first, that one is read back; if it took the
    chosen letter for someone else, the next free letter is tried.
    """
    for _ in range(ATTEMPTS):
        taken = set(Pseudonym.objects.filter(project=project).values_list("label", flat=True))
        try:
            with transaction.atomic():  # a savepoint, so a lost race leaves the caller's transaction usable
                row, _ = Pseudonym.objects.get_or_create(
                    project=project, user_id=user_id, defaults={"label": _next_free(taken)}
                )
        except IntegrityError:
            continue
        return row.label
    raise RuntimeError(f"no free pseudonym for user {user_id} in project {project.slug!r} after {ATTEMPTS} tries")


def pseudonyms_for(project: Project, users: Iterable[AbstractBaseUser | int]) -> dict[int, str]:
    """{user id: "Annotator A", ...} for the given users (objects or ids), making the missing ones."""
    ids = {user if isinstance(user, int) else user.pk for user in users}
    labels = dict(Pseudonym.objects.filter(project=project, user_id__in=ids).values_list("user_id", "label"))
    missing = ids - labels.keys()
    if missing:
        newcomers = get_user_model().objects.filter(pk__in=missing).order_by("username", "pk")
        for user_id in newcomers.values_list("pk", flat=True):
            labels[user_id] = _give_pseudonym(project, user_id)
    return labels
