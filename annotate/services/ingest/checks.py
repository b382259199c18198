"""The shared checks of both readers: types, offsets, ranges and column lengths.

Every failure is an ImportFailed naming the file, the sample and the field.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import models

from annotate.file_names import file_name_problem

MAX_TEXT_CHARS = 1_000_000


class ImportFailed(ValueError):
    """Bad input: the message names the file, the sample and the field."""


MAX_MESSAGES = 100  # an import that reports all its problems at once lists at most this many


class ImportProblems(ImportFailed):
    """Every problem an import described at once (at most MAX_MESSAGES listed, ``total`` counted); nothing was written."""

    def __init__(self, messages: list[str], total: int | None = None, *, repeats: int = 0) -> None:
        self.messages = list(messages[:MAX_MESSAGES])
        self.total = max(total if total is not None else len(messages), len(self.messages))
        # Of the problems, samples the project (or the import itself) holds already: each surface then says how
        # to import them anyway (the page's "Allow repeats", the API's allow_repeats, the command's --allow-repeats).
        self.repeats = repeats
        super().__init__(self.summary())

    def summary(self) -> str:
        if self.total == 1:
            return self.messages[0]
        text = f"{self.total} errors:\n" + "\n".join(self.messages)
        if self.total > len(self.messages):
            text += f"\n... and {self.total - len(self.messages)} more"
        return text

    def page_messages(self) -> list[str]:
        """The refusal as a page shows it, one message per problem: "Nothing was imported." and the problem, or
        the count, each problem, and how many more were not listed."""
        if self.total == 1:
            return [f"Nothing was imported. {self.messages[0]}"]
        shown = [f"Nothing was imported: {self.total} errors.", *self.messages]
        if self.total > len(self.messages):
            shown.append(f"... and {self.total - len(self.messages)} more.")
        return shown


def max_length(model: type[models.Model], name: str) -> int:
    limit = model._meta.get_field(name).max_length
    assert limit is not None, f"{model.__name__}.{name} has no max_length"
    return limit


def username_limit() -> int:
    User = get_user_model()
    return max_length(User, User.USERNAME_FIELD)


def _fits(value: str, limit: int, where: str, name: str) -> str:
    """The value, or ImportFailed when its column cannot hold it (checked here, not by the database)."""
    if len(value) > limit:
        raise ImportFailed(f"{where}: field '{name}' has {len(value)} characters; the limit is {limit}")
    return value


def _shown(value: Any) -> str:
    """A value as an error message quotes it: repr, cut to 60 characters, so a long one does not drown the message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def described(value: Any) -> str:
    """A JSON value described in words, for "must be ..., found ..." messages: "null", "true", "the number 11.0",
    "the string 'h'", "a list of 2 items", "an object". Python's own names (NoneType, dict) mean nothing to
    whoever wrote the file."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {_shown(value)}" if value else "an empty string"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'' if len(value) == 1 else 's'}" if value else "an empty list"
    if isinstance(value, dict):
        return "an object"
    return f"a value of type {type(value).__name__}"


def _where(file: str, index: int, sample_id: Any = None) -> str:
    label = f"sample {_shown(sample_id)} (#{index})" if sample_id is not None else f"sample #{index}"
    return f"{file}: {label}"


def _text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str):
        raise ImportFailed(f"{where}: field '{name}' must be a string, found {described(value)}")
    if len(value) > MAX_TEXT_CHARS:
        raise ImportFailed(f"{where}: field '{name}' has {len(value)} characters; the limit is {MAX_TEXT_CHARS}")
    return value


def _filled_text(value: Any, where: str, name: str) -> str:
    """A sample's source or summary: a string (_text) with something in it. An empty one, or one of white space
    alone, is nothing to annotate or judge, and its sentences and embeddings would be empty."""
    text = _text(value, where, name)
    if not text.strip():
        raise ImportFailed(f"{where}: field '{name}' is {'empty' if not text else 'only white space'}; a sample needs "
                           "its text")
    return text


def batch_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a batch's name, as a clause naming what is wrong and why, or None: an export writes
    each batch as a file named after it (annotate.file_names)."""
    problem = file_name_problem(name)
    if problem is None:
        return None
    return f"{problem}: an export writes each batch as a file '<batch name>.json', so a batch name must be a safe file name"


def _offset(value: Any, where: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ImportFailed(f"{where}: field '{name}' must be a whole number, found {described(value)}")
    return value


def _check_range(text: str, start: int, end: int, quoted: Any, where: str, prefix: str) -> None:
    # An empty span (start == end) or one of white space alone is in range and is kept, as a real dump may
    # hold one and an export gives it back; spans made in the app are neither (annotate.services.spans).
    if not 0 <= start <= end <= len(text):
        raise ImportFailed(
            f"{where}: {prefix}_start/{prefix}_end {start}..{end} out of range for a text of {len(text)} characters"
        )
    if quoted is not None and text[start:end] != quoted:
        raise ImportFailed(
            f"{where}: field '{prefix}_span' {_shown(quoted)} does not match the text at {start}..{end}, "
            f"which is {_shown(text[start:end])}"
        )
