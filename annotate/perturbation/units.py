"""Word units of a text and the MASK step: which units may be replaced, and a seeded random choice of them.

A unit is one spaCy token, or a whole named entity ("San Diego", "3 March
2024"), so that an entity is replaced as a whole. Stop words, punctuation and
everything in the first ``context_sentences`` sentences are never masked: the
kept sentences give the reader (and the judges) the context the perturbed part
is read against.

The default spaCy pipeline needs no download: spaCy's blank English (its
tokenizer and stop-word list), a sentencizer, and an entity ruler with our own
patterns for dates, capitalised names and numbers. A full spaCy pipeline (by
local path, or an installed package name) may replace it; its statistical
entities are then used instead of the rules.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MONTHS = [
    "january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
NUMBER_WORDS = ["hundred", "thousand", "million", "billion", "trillion", "percent"]
RULES = "blank:en+rules"  # how parameters name the default pipeline


class SpacyPipelineError(RuntimeError):
    pass


def _entity_patterns() -> list[dict[str, Any]]:
    year = {"TEXT": {"REGEX": r"^(1\d{3}|20\d{2})s?$"}}
    day = {"TEXT": {"REGEX": r"^([1-9]|[12]\d|3[01])(st|nd|rd|th)?$"}}
    month = {"LOWER": {"IN": MONTHS}, "IS_TITLE": True}  # "march" in lower case is the verb
    weekday = {"LOWER": {"IN": WEEKDAYS}, "IS_TITLE": True}
    comma = {"ORTH": ",", "OP": "?"}
    # Capitalised words that are not stop words, months or weekdays: proper-noun-ish.
    name_word = {"TEXT": {"REGEX": r"^[A-Z][\w'’.-]*$"}, "IS_STOP": False,
                 "LOWER": {"NOT_IN": MONTHS + WEEKDAYS}}
    dates = [
        [year],
        [month],
        [weekday],
        [month, year],
        [day, month],
        [day, month, year],
        [month, day],
        [month, day, comma, year],
        [weekday, comma, day, month, year],
        [weekday, comma, month, day, comma, year],
    ]
    names = [
        [name_word, {**name_word, "OP": "+"}],  # two or more: "Ines Varga", "San Diego", "Mayor Ines Varga"
        [{**name_word, "IS_SENT_START": False}],  # one, not opening a sentence (where any word is capitalised)
    ]
    # Numbers, but not the years the DATE patterns take (an equally long match would be a tie).
    number = {"LIKE_NUM": True, "TEXT": {"REGEX": r"^(?!(1\d{3}|20\d{2})s?$)"}}
    numbers = [[number], [number, {"LOWER": {"IN": NUMBER_WORDS}}]]
    return (
        [{"label": "DATE", "pattern": pattern} for pattern in dates]
        + [{"label": "NAME", "pattern": pattern} for pattern in names]
        + [{"label": "CARDINAL", "pattern": pattern} for pattern in numbers]
    )


def rule_pipeline() -> Any:
    """spaCy's blank English with a sentencizer and our entity rules (no model to download)."""
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns(_entity_patterns())
    return nlp


def load_pipeline(name_or_path: str = "", *, setting: str = "PAIRS_SPACY_PIPELINE") -> Any:
    """The default rule pipeline for "", else a spaCy pipeline from a local directory or an installed package.

    spaCy never downloads in ``spacy.load``; a name that is neither raises SpacyPipelineError naming
    ``setting``. A pipeline without sentence boundaries gets a sentencizer, one without entities our rules.
    """
    if not name_or_path:
        return rule_pipeline()
    import spacy

    path = Path(name_or_path).expanduser()
    if not path.is_dir() and not spacy.util.is_package(name_or_path):
        raise SpacyPipelineError(
            f"{setting}: {name_or_path!r} is neither a local spaCy pipeline directory nor an installed spaCy "
            "package; set it to a local pipeline directory, or leave it blank for spaCy's blank English "
            "with FaithLab's entity rules"
        )
    try:
        nlp = spacy.load(path if path.is_dir() else name_or_path)
    except Exception as error:
        raise SpacyPipelineError(f"{setting}: cannot load spaCy pipeline {name_or_path!r} ({error})") from error
    if not {"parser", "senter", "sentencizer"} & set(nlp.pipe_names):
        nlp.add_pipe("sentencizer", first=True)
    if not {"ner", "entity_ruler"} & set(nlp.pipe_names):
        nlp.add_pipe("entity_ruler").add_patterns(_entity_patterns())
    return nlp


@dataclass(frozen=True)
class WordUnit:
    """A word or a whole entity: code-point offsets into the text, end-exclusive."""

    start: int
    end: int
    text: str
    entity: str  # the entity label, "" for a plain word
    maskable: bool


def _is_content(token: Any) -> bool:
    return not (token.is_stop or token.is_punct or token.is_space) and any(ch.isalnum() for ch in token.text)


def context_end(doc: Any, context_sentences: int) -> int:
    """Offset where the text after the kept sentences starts (the text's length when all are kept)."""
    if context_sentences <= 0:
        return 0
    for index, sentence in enumerate(doc.sents):
        if index == context_sentences:
            return sentence.start_char
    return len(doc.text)


def word_units(text: str, nlp: Any, context_sentences: int) -> list[WordUnit]:
    """Every unit of the text in order; ``maskable`` is False for stop words, punctuation and kept sentences."""
    doc = nlp(text)
    keep_until = context_end(doc, context_sentences)
    entity_at = {}
    for entity in doc.ents:
        for index in range(entity.start, entity.end):
            entity_at[index] = entity
    units: list[WordUnit] = []
    index = 0
    while index < len(doc):
        entity = entity_at.get(index)
        if entity is not None:
            tokens = list(entity)
            start, end, label = entity.start_char, entity.end_char, entity.label_
            index = entity.end
        else:
            token = doc[index]
            tokens = [token]
            start, end, label = token.idx, token.idx + len(token.text), ""
            index += 1
        if tokens[0].is_space and len(tokens) == 1:
            continue
        maskable = start >= keep_until and any(_is_content(token) for token in tokens)
        units.append(WordUnit(start, end, text[start:end], label, maskable))
    return units


def choose_masked(units: list[WordUnit], mask_ratio: float, rng: random.Random) -> list[WordUnit]:
    """A share ``mask_ratio`` of the given units (at least one when there is any), chosen at random, in text order."""
    if not units:
        return []
    count = min(len(units), max(1, round(mask_ratio * len(units))))
    return sorted(rng.sample(units, count), key=lambda unit: unit.start)
