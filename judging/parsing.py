"""Reading a judge's answer: the first JSON object in the text, and a score only when it is an integer 1-5.

DESIGN.md: a missing score, a score that is not an integer 1-5, or no JSON at all
is a parse failure, stored with the raw answer and never turned into a number.
So nothing here coerces: the string "4", the float 4.0 and the boolean true are
all refused (JSON tells 4 from 4.0 and from "4"; a judge that writes them is not
following the answer format, and accepting some would make the count of parse
failures depend on which near-misses we happen to forgive).

Two things are not the answer, because reading them would be a guess:
- what a reasoning model thinks aloud in ``<think>...</think>`` (or
  ``<thinking>...</thinking>``) before answering: a draft score in there is not
  its verdict, so the JSON is read from the text after the block;
- a first JSON object that a later one contradicts ("Initial guess: {"score": 2}
  ... final answer: {"score": 5}"): the first object is still the one read, but
  a later object with a different top-level "score" makes the answer a parse
  failure naming both scores. The same score written again is fine.

Pure: no Django, no network.
"""

from __future__ import annotations

import json
import re
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

# <think> (DeepSeek-R1, Qwen3, QwQ and the servers that relay them) and <thinking>: a reasoning model's scratchpad.
_THINK_TAG = re.compile(r"<(/?)(think|thinking)>", re.IGNORECASE)


@dataclass(frozen=True)
class ParsedAnswer:
    """What a judge's answer says; `error` is None exactly when `score` is a valid integer 1-5."""

    score: int | None
    reasoning: str
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


def answer_after_thinking(text: str) -> tuple[str, str | None]:
    """The part of `text` that is the answer, without the model's ``<think>`` blocks; and why there is none, if so.

    A closed block is dropped wherever it is. A ``</think>`` before any opening
    tag ends thinking that the chat template opened in the prompt (as
    DeepSeek-R1's does): everything before it is dropped. A block that never
    closes runs to the end of the answer (a model cut off while thinking) and is
    dropped too; when no JSON is left before it, or nothing follows a closed
    block, the second value says so (the caller reports that, not "no JSON").
    """
    kept: list[str] = []
    position = 0  # where the text not yet kept or dropped starts
    thinking = False
    for tag in _THINK_TAG.finditer(text):
        closing = tag.group(1) == "/"
        if not thinking and not closing:
            kept.append(text[position:tag.start()])
            thinking = True
        elif thinking and closing:
            thinking = False
        elif not (closing and position == 0 and not kept):
            continue  # a stray tag (a second <think> inside one, a </think> inside the answer): no boundary
        position = tag.end()
    if position == 0:
        return text, None  # no block at all
    if thinking:
        answer = "".join(kept)
        if "{" not in answer:
            return answer, ("The answer is a <think> block that never closes: there is no answer after the "
                            "reasoning (it may be truncated).")
        return answer, None
    answer = "".join(kept) + text[position:]
    if not answer.strip():
        return answer, "The answer has nothing after its <think> block: the reasoning came, the answer did not."
    return answer, None


def _json_objects(text: str) -> list[tuple[dict, int]]:
    """Every top-level `{...}` of `text` that decodes as a JSON object, with where it starts, in order.

    Tries the standard decoder at every `{` in turn, so an object inside prose or a
    ```json fence is found, and a `{` that starts no valid object (prose, a
    truncated answer) is skipped. An object nested inside another is part of it,
    not a candidate of its own: the search goes on after the object's end.
    """
    found: list[tuple[dict, int]] = []
    start = text.find("{")
    while start != -1:
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        found.append((value, start))  # JSON that starts with "{" and decodes is an object
        start = text.find("{", end)
    return found


def first_json_object(text: str) -> dict | None:
    """The first `{...}` in `text` that decodes as a JSON object (also inside prose or a code fence), or None."""
    found = _json_objects(text)
    return found[0][0] if found else None


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
    the first JSON object after any ``<think>`` block, and only when no later JSON
    object of the answer gives a different top-level "score". In reasoning mode a
    missing or empty "reasoning" is not a failure: the score still counts and the
    reasoning stays "". In score-only mode any reasoning the judge volunteers is
    ignored (the raw answer, stored by the caller, keeps everything).
    """
    if raw is None or not raw.strip():
        return ParsedAnswer(None, "", "The answer is empty.")
    text, no_answer = answer_after_thinking(raw)
    if no_answer is not None:
        return ParsedAnswer(None, "", no_answer)
    objects = _json_objects(text)
    if not objects:
        if "{" in text:
            return ParsedAnswer(None, "", "The answer holds no complete JSON object (it may be truncated).")
        return ParsedAnswer(None, "", "The answer holds no JSON object.")
    answer = objects[0][0]
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
    contradiction = _later_score(answer["score"], [later for later, _start in objects[1:]])
    if contradiction is not None:
        return ParsedAnswer(None, reasoning, contradiction)
    problem = score_problem(answer["score"])
    if problem is not None:
        return ParsedAnswer(None, reasoning, problem)
    return ParsedAnswer(answer["score"], reasoning, None)


def _later_score(first: Any, later_objects: list[dict]) -> str | None:
    """Why the answer is ambiguous when a later JSON object gives another top-level "score" than the first, else None.

    Values are compared as JSON (5 and 5.0 and "5" differ), as the score check reads them.
    """
    written = json.dumps(first)
    for later in later_objects:
        if "score" in later and json.dumps(later["score"]) != written:
            return (f"Two scores in one answer: {_shown(first)} and {_shown(later['score'])} (in two JSON "
                    "objects); which one the judge meant is not guessed.")
    return None


def parse_rewrite_answer(raw: str | None) -> tuple[str | None, str | None]:
    """(rewritten sentence, None), or (None, why not) for a rewrite prompt's answer `{"rewritten": "..."}`."""
    if raw is None or not raw.strip():
        return None, "The answer is empty."
    text, no_answer = answer_after_thinking(raw)
    if no_answer is not None:
        return None, no_answer
    answer = first_json_object(text)
    if answer is None:
        return None, "The answer holds no JSON object."
    rewritten = answer.get("rewritten")
    if not isinstance(rewritten, str) or not rewritten.strip():
        return None, 'The JSON object has no non-empty "rewritten" string.'
    return rewritten.strip(), None
