"""Reading a judge's answer: the first JSON object in the text, and a score only when it is an integer 1-5.

DESIGN.md: a missing score, a score that is not an integer 1-5, or no JSON at all
is a parse failure, stored with the raw answer and never turned into a number.
So nothing here coerces: the string "4", the float 4.0 and the boolean true are
all refused (JSON tells 4 from 4.0 and from "4"; a judge that writes them is not
following the answer format, and accepting some would make the count of parse
failures depend on which near-misses we happen to forgive).

Pure: no Django, no network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SCORE_MIN = 1
SCORE_MAX = 5


class _JsonObject(dict):
    """A decoded JSON object that remembers every value of a key written more than once (JSON allows it)."""

    repeated: dict[str, list[Any]]


def _object_from_pairs(pairs: list[tuple[str, Any]]) -> _JsonObject:
    decoded = _JsonObject()
    decoded.repeated = {}
    for key, value in pairs:
        if key in decoded:
            decoded.repeated.setdefault(key, [decoded[key]]).append(value)
        decoded[key] = value
    return decoded


_DECODER = json.JSONDecoder(object_pairs_hook=_object_from_pairs)


@dataclass(frozen=True)
class ParsedAnswer:
    """What a judge's answer says; `error` is None exactly when `score` is a valid integer 1-5."""

    score: int | None
    reasoning: str
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


def first_json_object(text: str) -> dict | None:
    """The first `{...}` in `text` that decodes as a JSON object, or None.

    Tries the standard decoder at every `{` in turn, so an object inside prose or a
    ```json fence is found, and a `{` that starts no valid object (prose, a
    truncated answer) is skipped. The first object that decodes wins; an object
    nested inside it is part of it, not a second candidate.
    """
    start = text.find("{")
    while start != -1:
        try:
            value, _end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        return value  # JSON that starts with "{" and decodes is an object
    return None


def _shown(value: Any) -> str:
    """A value as the answer wrote it, short enough for an error sentence."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def score_problem(value: Any) -> str | None:
    """Why `value` is not a valid score, or None when it is an integer 1-5."""
    # bool is a subclass of int in Python: check it first, JSON true is not a score.
    if isinstance(value, bool):
        return f"The score is {_shown(value)}, a boolean, not an integer from 1 to 5."
    if isinstance(value, int):
        if SCORE_MIN <= value <= SCORE_MAX:
            return None
        return f"The score {value} is outside the scale 1 to 5."
    if isinstance(value, float):
        return f"The score {_shown(value)} is a decimal number, not an integer from 1 to 5."
    if isinstance(value, str):
        return f"The score {_shown(value)} is a string, not an integer from 1 to 5."
    if value is None:
        return "The score is null, not an integer from 1 to 5."
    kind = "a list" if isinstance(value, list) else "an object"
    return f"The score is {kind}, not an integer from 1 to 5."


def parse_judge_answer(raw: str | None, *, with_reasoning: bool) -> ParsedAnswer:
    """The score (and, with reasoning, the reasoning) of a judge's answer, or the reason it has none.

    The score counts only as a JSON integer 1-5 under the top-level key "score" of
    the first JSON object. In reasoning mode a missing or empty "reasoning" is not
    a failure: the score still counts and the reasoning stays "". In score-only
    mode any reasoning the judge volunteers is ignored (the raw answer keeps it).
    """
    if raw is None or not raw.strip():
        return ParsedAnswer(None, "", "The answer is empty.")
    answer = first_json_object(raw)
    if answer is None:
        if "{" in raw:
            return ParsedAnswer(None, "", "The answer holds no complete JSON object (it may be truncated).")
        return ParsedAnswer(None, "", "The answer holds no JSON object.")
    reasoning = ""
    if with_reasoning:
        written = answer.get("reasoning")
        reasoning = written.strip() if isinstance(written, str) else ""
    if "score" not in answer:
        return ParsedAnswer(None, reasoning, 'The JSON object has no "score" field.')
    # Two different scores in one object: the plain decoder would keep the last, a guess at which one the judge meant.
    scores = getattr(answer, "repeated", {}).get("score", [])
    if len({json.dumps(value) for value in scores}) > 1:
        shown = ", ".join(_shown(value) for value in scores)
        return ParsedAnswer(None, reasoning, f'The JSON object gives "score" more than once ({shown}).')
    problem = score_problem(answer["score"])
    if problem is not None:
        return ParsedAnswer(None, reasoning, problem)
    return ParsedAnswer(answer["score"], reasoning, None)


def parse_rewrite_answer(raw: str | None) -> tuple[str | None, str | None]:
    """(rewritten sentence, None), or (None, why not) for a rewrite prompt's answer `{"rewritten": "..."}`."""
    if raw is None or not raw.strip():
        return None, "The answer is empty."
    answer = first_json_object(raw)
    if answer is None:
        return None, "The answer holds no JSON object."
    rewritten = answer.get("rewritten")
    if not isinstance(rewritten, str) or not rewritten.strip():
        return None, 'The JSON object has no non-empty "rewritten" string.'
    return rewritten.strip(), None
