"""Default prompts of the judging app, the chat messages a rubric judge receives, and checks on edited prompts.

The rubric follows "On a scale from 1 to 5" (Jing et al.) in content: four
aspects and five levels as DESIGN.md states them. The wording is FaithLab's own.
Projects edit these texts; every edit is a new PromptVersion that runs record.

Pure: no Django, no network.
"""

from __future__ import annotations

import re
from typing import Any

DEFAULT_RUBRIC = """\
You check whether a piece of text written by a language model (the output) is faithful to the document it was \
written from (the source). The source is the only evidence: what you know about the world does not count, and an \
output that is true in the world but not stated or implied by the source is still unsupported.

Look at four aspects of the output:
- Factual consistency: names, numbers, dates, places, causes and who did what agree with the source.
- Unsupported adjectives: descriptive or evaluative words (for example "historic", "controversial", "massive") \
that the source does not back.
- Speculation: guesses, predictions, motives or consequences that the source does not state.
- Alignment with the source: the output keeps the source's meaning, emphasis and certainty, and does not merge \
separate facts into a claim the source does not make.

Then give one score on this scale:
5 - Fully faithful: every piece of information in the output can be verified in the source.
4 - One minor piece of information cannot be verified in the source, and it would not mislead or harm a reader.
3 - More than one piece of information cannot be verified in the source, but none of them would mislead or harm \
a reader.
2 - One or more pieces of information are inaccurate or cannot be verified in the source, and at least one of \
them could mislead or harm a reader.
1 - Most or all of the output is inaccurate or cannot be verified in the source, in ways that mislead or harm \
a reader.
"""

_REWRITE_ANSWER = (
    'Answer with one JSON object and nothing else: {"rewritten": "<the new sentence>"}. '
    "Do not explain the change."
)

DEFAULT_INTRINSIC_PROMPT = (
    """\
You help build a test set of unfaithful summaries. Below are a source document, a summary of it, and one sentence \
of that summary.

Rewrite the sentence so that exactly one fact in it contradicts the source: change a name, a number, a date, a \
place, a cause or who did what, using information that the source itself mentions where you can. Keep the rest of \
the sentence as it is: same length, same style, same tense, fluent enough that a hurried reader would not notice. \
Do not add new information that the source does not mention, and do not change more than one fact.

Source:
{source}

Summary:
{output}

Sentence to rewrite:
{sentence}

"""
    + _REWRITE_ANSWER
)

DEFAULT_EXTRINSIC_PROMPT = (
    """\
You help build a test set of unfaithful summaries. Below are a source document, a summary of it, and one sentence \
of that summary.

Rewrite the sentence so that it states exactly one new fact that the source cannot verify: a plausible detail, \
figure, quotation, reason or consequence that appears nowhere in the source and does not contradict it. Keep every \
fact the sentence already states, and keep its style and tense, so that the addition reads naturally. Do not \
change anything the source does support.

Source:
{source}

Summary:
{output}

Sentence to rewrite:
{sentence}

"""
    + _REWRITE_ANSWER
)

_DEFAULTS = {
    "rubric": DEFAULT_RUBRIC,
    "intrinsic": DEFAULT_INTRINSIC_PROMPT,
    "extrinsic": DEFAULT_EXTRINSIC_PROMPT,
}

REWRITE_PLACEHOLDERS = ("{source}", "{output}", "{sentence}")

# A line that defines a level: optional list marks or "Score"/"Level", then the number, then not another digit
# or a decimal part ("5 -", "**4**:", "Score 3 =", "(2)"; not "15" or "2.5").
_LEVEL_LINE = re.compile(r"^[\s>*#\-_(\[]*(?:(?:score|level)\s*)?[(\[]?([1-9]\d*)(?![\d])(?!\.\d)", re.IGNORECASE)


def default_prompt(kind: str) -> str:
    """The default text of a prompt kind: "rubric", "intrinsic" or "extrinsic"."""
    try:
        return _DEFAULTS[kind]
    except KeyError:
        raise ValueError(f"Unknown prompt kind {kind!r}: expected one of rubric, intrinsic, extrinsic.") from None


def defined_levels(text: str) -> set[int]:
    """The numbers that start a line of `text` (how a rubric writes its levels)."""
    levels = set()
    for line in text.splitlines():
        match = _LEVEL_LINE.match(line)
        if match:
            levels.add(int(match.group(1)))
    return levels


# A line that gives a score outside the scale: the number (0 included) as a level line starts it, then a mark that
# ends a level's number (a space, "-", ":", "=", ".", ")", "]", "*" or the line's end): "6 superb", "0 = nonsense",
# "**7**:"; not "100% of ...", whose number is no level.
_OUT_OF_SCALE_LINE = re.compile(
    r"^[\s>*#\-_(\[]*(?:(?:score|level)\s*)?[(\[]?(\d+)(?![\d])(?!\.\d)(?=$|[\s\-\u2013\u2014:=.)\]*])", re.IGNORECASE
)
# What a level line holds besides its number and the marks around it: a description has a letter or a digit.
_DESCRIBED = re.compile(r"\w")


def _quoted(line: str) -> str:
    line = line.strip()
    return f'"{line}"' if len(line) <= 60 else f'"{line[:57]}..."'


def rubric_problems(text: str) -> list[str]:
    """What keeps `text` from being a usable rubric; empty when it is fine.

    A rubric must define each score 1 to 5 on a line that starts with the score:
    the judge is asked for an integer 1-5 and anything else is a parse failure,
    so a rubric without that scale would make a judge whose answers we refuse.
    A level outside 1-5 ("6 superb", "0 - nonsense") is refused, naming its line:
    it asks for scores the judge may not give. So is a level with no description
    (a line "3" alone, or "3:" with nothing under it before the next level): it
    tells the judge nothing, and does not count as defining the score.
    """
    if not text.strip():
        return ["the rubric is empty"]
    lines = text.splitlines()
    problems: list[str] = []
    levels: list[tuple[int, int]] = []  # (line index, score) of each level line in the scale
    for index, line in enumerate(lines):
        match = _LEVEL_LINE.match(line)
        if match and 1 <= int(match.group(1)) <= 5:
            levels.append((index, int(match.group(1))))
            continue
        outside = _OUT_OF_SCALE_LINE.match(line)
        if outside:
            score = int(outside.group(1))
            problems.append(
                f"line {index + 1} ({_quoted(line)}) defines score {score}, outside the scale 1 to 5: the judge may "
                "answer only 1 to 5, so remove that level (or start the line with something other than a number)"
            )
    if not levels:
        return [*problems, "the rubric has no score scale: write one line per score from 1 to 5, each starting with "
                "its number"]
    described: set[int] = set()
    undescribed: set[int] = set()
    for place, (index, score) in enumerate(levels):
        match = _LEVEL_LINE.match(lines[index])
        assert match is not None
        # Its description: the rest of its line, else the lines under it up to the next level line.
        following = levels[place + 1][0] if place + 1 < len(levels) else len(lines)
        below = [lines[index][match.end():], *lines[index + 1:following]]
        if any(_DESCRIBED.search(part) for part in below):
            described.add(score)
        else:
            undescribed.add(score)
            problems.append(
                f"line {index + 1} ({_quoted(lines[index])}) gives score {score} no description: write what a "
                f"{score} means after the number"
            )
    problems += [f"the rubric does not define score {score}" for score in range(1, 6)
                 if score not in described and score not in undescribed]
    return problems


def rewrite_prompt_problems(text: str) -> list[str]:
    """What keeps `text` from being a usable intrinsic or extrinsic rewrite prompt; empty when it is fine."""
    if not text.strip():
        return ["the prompt is empty"]
    return [f"the prompt does not contain the placeholder {name}" for name in REWRITE_PLACEHOLDERS if name not in text]


def fill_rewrite_prompt(template: str, *, source: str, output: str, sentence: str) -> str:
    """The rewrite prompt with its placeholders filled.

    Plain replacement, not str.format: the prompt holds a literal JSON example in
    braces, and the texts filled in may hold braces too. Filled in one pass so a
    placeholder written inside the source is left alone.
    """
    values = {"{source}": source, "{output}": output, "{sentence}": sentence}
    return re.sub(r"\{(?:source|output|sentence)\}", lambda match: values[match.group(0)], template)


def answer_instruction(with_reasoning: bool) -> str:
    """The answer format appended to the rubric in the system message."""
    if with_reasoning:
        return (
            "Answer with one JSON object and nothing else, in this form:\n"
            '{"reasoning": "<your reasoning>", "score": <an integer from 1 to 5>}\n'
            "Write the reasoning first: name each piece of the output that the source does not support and say why, "
            "quoting the words of the output or the source you rely on exactly, between double quotes. "
            "Then give the score as a bare integer, not a string."
        )
    return (
        "Answer with one JSON object and nothing else, in this form:\n"
        '{"score": <an integer from 1 to 5>}\n'
        "Give the score as a bare integer, not a string, and no explanation."
    )


def judge_messages(rubric: str, hypothesis: str, reference: str, *, with_reasoning: bool) -> list[dict]:
    """The chat messages of one rubric call: the rubric and answer format, then the output first and the source second."""
    system = rubric.strip() + "\n\n" + answer_instruction(with_reasoning)
    user = (
        "Judge how faithful the output is to the source.\n\n"
        "<output>\n" + hypothesis + "\n</output>\n\n"
        "<source>\n" + reference + "\n</source>"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def answer_schema(with_reasoning: bool) -> dict[str, Any]:
    """The JSON schema of a rubric answer, for endpoints with structured output.

    Strict-mode friendly (every property required, no others allowed); the score
    is an enum rather than minimum/maximum because more servers' constrained
    decoders support enum. Reasoning comes first so the model reasons before it scores.
    """
    properties: dict[str, Any] = {}
    if with_reasoning:
        properties["reasoning"] = {"type": "string"}
    properties["score"] = {"type": "integer", "enum": [1, 2, 3, 4, 5]}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def rewrite_schema() -> dict[str, Any]:
    """The JSON schema of a rewrite answer: `{"rewritten": str}`."""
    return {
        "type": "object",
        "properties": {"rewritten": {"type": "string"}},
        "required": ["rewritten"],
        "additionalProperties": False,
    }
