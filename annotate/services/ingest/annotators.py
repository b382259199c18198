"""Who is who: matching imported annotators to users by name or by id, and the names that carry several ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from annotate.services.ingest.checks import ImportFailed, _shown, username_limit
from annotate.services.ingest.parsed import ParsedBatch

# The username an annotation was matched to when it differs from its annotator_name (by-id), so that an
# export writes the file's own name back.
IMPORTED_AS = "_imported_as"
BY_NAME, BY_ID = "by-name", "by-id"
ANNOTATOR_MATCHING = (BY_NAME, BY_ID)
SHORT_ID = 4  # characters of an annotator_id in a by-id username, more when two ids of a name share them


@dataclass(frozen=True)
class AnnotatorIdConflict:
    """One annotator_name that carries several annotator_ids: several people, or one person in several batches."""

    name: str
    files_by_id: dict[str, list[str]]  # annotator_id -> the files it occurs in
    usernames: list[str]  # who the import made of them: one user by name, one per id by id

    def describe(self) -> str:
        ids = "; ".join(f"{annotator_id!r} in {', '.join(files)}" for annotator_id, files in self.files_by_id.items())
        said = f"annotator name {self.name!r} carries {len(self.files_by_id)} different annotator_ids ({ids})"
        if self.merged:
            return f"{said}: imported as one annotator, {self.usernames[0]!r}."
        return f"{said}: kept apart as {', '.join(repr(name) for name in self.usernames)}."

    @property
    def merged(self) -> bool:
        return len(self.usernames) == 1


def _annotator(username: str, cache: dict[str, AbstractBaseUser]) -> AbstractBaseUser:
    """Imported annotators are people matched by username; new ones cannot log in."""
    if username in cache:
        return cache[username]
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    if user is None:
        user = User(username=username)
        user.set_unusable_password()
        user.save()
    cache[username] = user
    return user


def _short_ids(ids: Sequence[str]) -> dict[str, str]:
    """Each id cut to SHORT_ID characters, or to as many as it takes to tell it from the others."""
    shorts = {}
    for annotator_id in ids:
        others = [other for other in ids if other != annotator_id]
        length = SHORT_ID
        while length < len(annotator_id) and any(other[:length] == annotator_id[:length] for other in others):
            length += 1
        shorts[annotator_id] = annotator_id[:length]
    return shorts


def annotator_usernames(batches: Sequence[ParsedBatch], matching: str) -> dict[tuple[str, str | None], str]:
    """The username of every (annotator_name, annotator_id) of the batches.

    by-name: the name. by-id: "name (short id)", one user per id; an annotation
    without an id keeps the bare name.
    """
    ids_by_name: dict[str, set[str]] = {}
    for batch in batches:
        for sample in batch.samples:
            for span in sample.spans:
                ids = ids_by_name.setdefault(span.annotator_name, set())
                if span.annotator_id is not None:
                    ids.add(span.annotator_id)
    usernames: dict[tuple[str, str | None], str] = {}
    for name, ids in ids_by_name.items():
        usernames[(name, None)] = name
        shorts = _short_ids(sorted(ids)) if matching == BY_ID else {}
        for annotator_id in ids:
            usernames[(name, annotator_id)] = f"{name} ({shorts[annotator_id]})" if matching == BY_ID else name
    return usernames


def annotator_id_conflicts(
    batches: Sequence[ParsedBatch], usernames: dict[tuple[str, str | None], str]
) -> list[AnnotatorIdConflict]:
    """Every annotator name that carries more than one annotator_id, with the files each id is in."""
    files: dict[str, dict[str, list[str]]] = {}
    for batch in batches:
        for sample in batch.samples:
            for span in sample.spans:
                if span.annotator_id is not None:
                    where = files.setdefault(span.annotator_name, {}).setdefault(span.annotator_id, [])
                    if batch.file not in where:
                        where.append(batch.file)
    return [
        AnnotatorIdConflict(
            name=name,
            files_by_id=dict(sorted(by_id.items())),
            usernames=sorted({usernames[(name, annotator_id)] for annotator_id in by_id}),
        )
        for name, by_id in sorted(files.items())
        if len(by_id) > 1
    ]


def _check_usernames(batches: Sequence[ParsedBatch], usernames: dict[tuple[str, str | None], str]) -> None:
    """A by-id username is longer than the name it comes from: it must still fit the username column."""
    limit = username_limit()
    for batch in batches:
        for sample in batch.samples:
            for span in sample.spans:
                username = usernames[(span.annotator_name, span.annotator_id)]
                if len(username) > limit:
                    raise ImportFailed(
                        f"{span.origin}: field 'annotator_name' with its annotator_id makes the username "
                        f"{_shown(username)} of {len(username)} characters; the limit is {limit}"
                    )
