"""Who is who: matching imported annotators to users by name or by id, and the names that carry several ids."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Q

from annotate.models import Membership, Project
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


@dataclass(frozen=True)
class CaseMerge:
    """Spellings of one name in an import that went to one account because usernames are compared ignoring case.

    A team reads this to tell whether "BOB" really is the member "bob", and
    whether "New User" and "new user" really are one person: the import cannot.
    """

    account: str  # the username the spellings went to
    spellings: list[str]  # the import's spellings (annotator names, by-id usernames, roster names), sorted
    existing: bool  # the account was the project's before this import (else the import made it)

    def describe(self) -> str:
        several = len(self.spellings) > 1
        names = " and ".join(repr(name) for name in self.spellings)
        said = f"annotator names {names} in this import were" if several else f"annotator {names} in this import was"
        if self.existing:
            target = f"the project's member {self.account!r}"
        else:
            target = f"one new annotator, {self.account!r}"
        return (
            f"{said} taken as {target}: usernames are compared ignoring case"
            f"{', so they are one person' if several else ''} (different people need names that differ in more "
            "than case)."
        )


def _taken_name(username: str, number: int) -> str:
    """The number-th username tried for an imported name that an account outside the project holds:
    "bob (imported)", "bob (imported 2)", ..., the name shortened where the suffix would not fit."""
    suffix = " (imported)" if number == 1 else f" (imported {number})"
    return username[: username_limit() - len(suffix)] + suffix


def _folded(username: str) -> str:
    """A username as the members page compares it: case-insensitively ("Bob" and "bob" are one name)."""
    return username.lower()


class ImportedAccounts:
    """The account each username planned by an import stands for in one project.

    A planned username names an existing account only when that account is
    already a member of the project (a re-import, or someone the admin added on
    purpose): an import must never give an existing login access to a project.
    Otherwise the import makes a new account that cannot log in, under the
    planned username when it is free, or else under "<name> (imported)" (the
    first such name that is free or that a member of this project already
    holds, so a re-import finds the same person). ``renamed`` maps each planned
    username that got a new account under another name to that name.

    Names are compared case-insensitively, as the members page compares them:
    "Bob" is taken when "bob" exists, stands for the member "bob", and two
    spellings of one name in an import are one account.

    Looking names up only reads: new accounts are made unsaved and kept in
    ``new_accounts`` (their names count as taken from then on), so an import
    resolves everyone before its transaction opens and saves them inside it
    (:meth:`save_new_accounts`).
    """

    def __init__(self, project: Project, planned: Iterable[str]) -> None:
        self.planned = {_folded(name) for name in planned}
        self.members = set(Membership.objects.filter(project=project).values_list("user_id", flat=True))
        self.accounts: dict[str, AbstractBaseUser] = {}  # by folded planned name
        self.renamed: dict[str, str] = {}
        self._renamed_keys: set[str] = set()
        self._spellings: dict[str, set[str]] = {}  # by folded planned name: every spelling asked for
        self._found_in_other_case: set[str] = set()  # folded names whose member holds another case of the name
        self._created: set[str] = set()  # folded names whose account this import made
        self.new_accounts: list[AbstractBaseUser] = []  # made by this import, saved by save_new_accounts
        self._new_usernames: set[str] = set()  # their usernames, folded: taken, though not saved yet

    def __getitem__(self, planned: str) -> AbstractBaseUser:
        key = _folded(planned)
        self._spellings.setdefault(key, set()).add(planned)
        if key not in self.accounts:
            self.accounts[key] = self._account(planned)
        elif key in self._renamed_keys:
            # Another spelling of a name that got a new account: this one went there too.
            self.renamed.setdefault(planned, self.accounts[key].get_username())
        return self.accounts[key]

    def case_merges(self) -> list[CaseMerge]:
        """Every account that a spelling reached only by ignoring case: several spellings of one name, or one
        spelling that found a member written in another case. An exact match is no merge."""
        return [
            CaseMerge(
                account=self.accounts[key].get_username(),
                spellings=sorted(spellings),
                existing=key not in self._created,
            )
            for key, spellings in sorted(self._spellings.items())
            if len(spellings) > 1 or key in self._found_in_other_case
        ]

    def _member(self, username: str) -> tuple[AbstractBaseUser | None, bool]:
        """The project's member holding ``username`` in any case (the exact spelling first), and whether anyone
        holds it."""
        User = get_user_model()
        holders = list(User.objects.filter(**{f"{User.USERNAME_FIELD}__iexact": username}).order_by("pk"))
        members = sorted(
            (holder for holder in holders if holder.pk in self.members),
            key=lambda holder: holder.get_username() != username,
        )
        return (members[0] if members else None), bool(holders) or _folded(username) in self._new_usernames

    def _account(self, planned: str) -> AbstractBaseUser:
        key = _folded(planned)
        member, taken = self._member(planned)
        if member is not None:
            return self._found(key, planned, member)
        if not taken:
            self._created.add(key)
            return self._new_account(planned)
        for number in itertools.count(1):
            username = _taken_name(planned, number)
            member, taken = self._member(username)
            if member is not None:
                return self._found(key, username, member)
            if not taken and _folded(username) not in self.planned:
                self.renamed[planned] = username
                self._renamed_keys.add(key)
                self._created.add(key)
                return self._new_account(username)
        raise AssertionError("unreachable: itertools.count never ends")

    def _found(self, key: str, looked_for: str, member: AbstractBaseUser) -> AbstractBaseUser:
        """The member a name stands for, remembered as a merge when the member writes the name in another case."""
        if member.get_username() != looked_for:
            self._found_in_other_case.add(key)
        return member

    def _new_account(self, username: str) -> AbstractBaseUser:
        """An account that cannot log in, unsaved until save_new_accounts (inside the import's transaction)."""
        user = get_user_model()(username=username)
        user.set_unusable_password()
        self.new_accounts.append(user)
        self._new_usernames.add(_folded(username))
        return user

    def save_new_accounts(self) -> None:
        """Save the accounts this import made, unless one of their usernames was taken (in any case) since they
        were looked up: then nothing is saved and the import is refused, as it would have been then."""
        User = get_user_model()
        if not self.new_accounts:
            return
        clash = Q()
        for user in self.new_accounts:
            clash |= Q(**{f"{User.USERNAME_FIELD}__iexact": user.get_username()})
        taken = User.objects.filter(clash).values_list(User.USERNAME_FIELD, flat=True).first()
        if taken is not None:
            raise ImportFailed(
                f"annotator {taken!r}: an account with that username was made while this import was being "
                "checked; nothing was imported. Import the files again to match annotators against it."
            )
        for user in self.new_accounts:
            user.save()

    def username(self, planned: str) -> str | None:
        """The username the planned one ended as, None while no span or roster has asked for it."""
        account = self.accounts.get(_folded(planned))
        return account.get_username() if account is not None else None


def describe_taken_name(planned: str, username: str) -> str:
    return (
        f"annotator {planned!r}: that username belongs to an account outside this project, and an import "
        f"gives no existing account access to a project, so the spans went to a new account, {username!r}."
    )


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
