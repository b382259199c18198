"""Which sentences of the other text a selection points at (semantic highlighting). Pure: no Django imports.

A selection is scored against every sentence of the other text with four kinds of
evidence, each z-scored over the other text's sentences and summed with weights
tuned on real FaithBench links (docs/performance.md, "Semantic highlighting
quality"):

- **lexical**: BM25 (the ``bm25s`` package) over the other text's sentences. The
  query is the selection's own sentence(s), with the selected words counted
  ``SELECTED_WORD_REPEATS`` more times: a short selection ("eight weeks") says
  little alone, its sentence says which passage it is about. Words are
  lower-cased, stop words dropped, endings trimmed, numbers normalised (``eight``
  and ``8`` match, ``2,956,737`` is one token).
- **phrase**: the model's token vectors of the selected words, read in the
  context of their sentence (one forward pass) and mean-pooled, against the
  stored unit vectors of the other text's sentences.
- **position**: summaries mostly follow the source's order, so a sentence at
  the same relative place is a little more likely.
- **near-miss numbers**: the selection has a number and the sentence has a
  different number of the same thing ("eight weeks" / "eleven weeks"): where a
  summary changed a figure, the sentence with the original figure is the one to
  check.

``rank`` returns each sentence's summed evidence through the logistic function
(0..1, same order) and ``closest``: only the sentences the evidence is strong
enough for (see ``confident``), empty when nothing relates, e.g. a selection of
noise or of words that appear nowhere in the other text and mean something else.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import numpy as np

# (vectors, offsets): one row per model token of a text, and each token's
# [start, end) in code points of that text. Special tokens have start == end.
TokenEncoder = Callable[[str], tuple[np.ndarray, list[tuple[int, int]]]]

WEIGHTS = {"lexical": 1.0, "phrase": 1.0, "position": 0.25, "near_miss": 0.25}
SELECTED_WORD_REPEATS = 3
# The forward pass for the phrase vector reads at most this much text around the selection:
# its cost grows with length, and the words next to the selection carry the context.
CONTEXT_CHARS = 300
MAX_CLOSEST = 3
# Confidence, tuned on FaithBench links and on selections paired with an unrelated text.
MIN_PHRASE_SIMILARITY = 0.4
MIN_COVERAGE = 0.5
CLOSE_TO_TOP = 0.6

_WORD = re.compile(r"\d+(?:[.,]\d+)*|\w+")
_NUMBER_WORDS = {
    word: str(value)
    for value, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty".split()
    )
} | {
    "thirty": "30",
    "forty": "40",
    "fifty": "50",
    "sixty": "60",
    "seventy": "70",
    "eighty": "80",
    "ninety": "90",
    "hundred": "100",
    "thousand": "1000",
    "million": "1000000",
    "billion": "1000000000",
}


@dataclass(frozen=True)
class Ranking:
    """``scores``: one per sentence of the other text, in 0..1, higher is closer. ``closest``: confident ones, best first.

    A score is the summed evidence (``combine``) through the logistic function: the
    same order, on a scale a person can read next to a sentence.
    """

    scores: list[float]
    closest: list[int]


def prepare() -> None:
    """Import what ranking needs (about a second) ahead of the first request; the model loader calls it."""
    _bm25s()
    _stop_words()


@functools.cache
def _bm25s() -> ModuleType:
    import bm25s

    # bm25s sets its own logger to DEBUG when imported, which would log a line per request.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


@functools.cache
def _stop_words() -> frozenset[str]:
    # scikit-learn's English list (318 words); imported on first use, it takes a moment.
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS) - set(_NUMBER_WORDS)


def _normalise(word: str) -> str:
    word = word.lower()
    if word[0].isdigit():
        # 2,956,737 -> 2956737; 12.4 stays 12.4
        return re.sub(r",(?=\d{3}\b)", "", word)
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def terms(text: str) -> list[str]:
    """Content words of ``text`` for lexical matching: normalised, stop words and stray letters dropped."""
    stop = _stop_words()
    return [
        _normalise(word)
        for word in _WORD.findall(text)
        if word.lower() not in stop and (len(word) > 1 or word.isdigit())
    ]


def _numbers(text: str) -> list[tuple[str, str]]:
    """(value, the word after it) for every number in ``text``: ``eight weeks`` -> ("8", "week")."""
    words = [_normalise(word) for word in _WORD.findall(text)]
    found = []
    for i, word in enumerate(words):
        if word[0].isdigit():
            unit = next((w for w in words[i + 1 : i + 3] if not w[0].isdigit()), "")
            found.append((word, unit))
    return found


def _zscore(values: np.ndarray) -> np.ndarray:
    spread = float(values.std())
    if spread < 1e-9:
        return np.zeros_like(values, dtype=np.float64)
    return (values - values.mean()) / spread


def _word_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a selection that cuts a word ("nd has performed") to whole words."""
    while start > 0 and text[start - 1].isalnum() and text[start].isalnum():
        start -= 1
    while end < len(text) and text[end - 1].isalnum() and text[end].isalnum():
        end += 1
    return start, end


def _own_span(sentences: Sequence[Sequence[int]], start: int, end: int) -> tuple[int, int, float]:
    """Start and end of the sentences the selection overlaps, and their mean index (for the position prior)."""
    own = [i for i, (s, e) in enumerate(sentences) if s < end and start < e]
    if not own:
        return start, end, -1.0
    return int(sentences[own[0]][0]), int(sentences[own[-1]][1]), float(np.mean(own))


def _lexical(target_terms: list[list[str]], query: list[str]) -> np.ndarray:
    # An empty sentence ("—") still needs a document, or the indexes shift.
    corpus = [words or ["\u2400"] for words in target_terms]
    index = _bm25s().BM25(method="lucene")
    index.index(corpus, show_progress=False)
    known = [word for word in query if word in index.vocab_dict]
    if not known:
        return np.zeros(len(corpus))
    return np.asarray(index.get_scores(known), dtype=np.float64)


def _phrase_vector(text: str, start: int, end: int, span: tuple[int, int], encode_tokens: TokenEncoder) -> np.ndarray:
    """Mean of the selected tokens' vectors, read within their sentence (at most CONTEXT_CHARS of it)."""
    window_start, window_end = span
    if window_end - window_start > CONTEXT_CHARS:
        slack = max(0, CONTEXT_CHARS - (end - start)) // 2
        window_start = max(window_start, start - slack)
        window_end = min(window_end, max(end + slack, window_start + CONTEXT_CHARS))
    vectors, offsets = encode_tokens(text[window_start:window_end])
    inside = [i for i, (s, e) in enumerate(offsets) if e > s and window_start + s < end and start < window_start + e]
    # A selection longer than the encoder reads (its token limit): the tokens it did read stand for it.
    chosen = vectors[inside] if inside else vectors
    pooled = chosen.mean(axis=0)
    norm = float(np.linalg.norm(pooled))
    return pooled / norm if norm > 0 else pooled


def evidence(
    *,
    selected_text: str,
    start: int,
    end: int,
    selected_sentences: Sequence[Sequence[int]],
    target_text: str,
    target_sentences: Sequence[Sequence[int]],
    target_vectors: np.ndarray,
    encode_tokens: TokenEncoder,
) -> dict[str, np.ndarray]:
    """Each kind of evidence for every sentence of ``target_text`` (see the module docstring), plus ``coverage``.

    ``coverage`` is the share of the selected words (of its sentence's words when
    the selection holds only stop words) that a sentence contains; with
    ``phrase`` it decides confidence.
    """
    if not 0 <= start < end <= len(selected_text):
        raise ValueError(f"selection {start}..{end} is outside a text of {len(selected_text)} characters")
    count = len(target_sentences)
    if len(target_vectors) != count:
        raise ValueError(f"{len(target_vectors)} sentence vectors for {count} sentences")
    if count == 0:
        return {name: np.zeros(0) for name in (*WEIGHTS, "coverage")}
    start, end = _word_bounds(selected_text, start, end)
    own_start, own_end, own_index = _own_span(selected_sentences, start, end)
    selected = selected_text[start:end]
    context = selected_text[own_start:own_end]
    target_terms = [terms(target_text[s:e]) for s, e in target_sentences]
    selected_terms = terms(selected)

    lexical = _lexical(target_terms, terms(context) + selected_terms * SELECTED_WORD_REPEATS)

    phrase_vector = _phrase_vector(selected_text, start, end, (own_start, own_end), encode_tokens)
    phrase = np.asarray(target_vectors, dtype=np.float64).reshape(count, -1) @ phrase_vector.astype(np.float64)

    if own_index >= 0 and selected_sentences:
        where = (own_index + 0.5) / len(selected_sentences)
    else:
        where = ((start + end) / 2) / max(1, len(selected_text))
    position = -np.abs(where - (np.arange(count) + 0.5) / max(1, count))

    near_miss = np.zeros(count)
    selected_numbers = _numbers(selected)
    if selected_numbers:
        for j, (s, e) in enumerate(target_sentences):
            found = _numbers(target_text[s:e])
            values, units = {v for v, _ in found}, {u for _, u in found if u}
            near_miss[j] = sum(1 for value, unit in selected_numbers if value not in values and unit in units)

    return {
        "lexical": lexical,
        "phrase": phrase,
        "position": position,
        "near_miss": near_miss,
        "coverage": _coverage(selected_terms or terms(context), target_terms),
    }


def combine(found: dict[str, np.ndarray]) -> np.ndarray:
    """The ranking score: each kind of evidence z-scored over the sentences, weighted, summed."""
    return sum(weight * _zscore(found[name]) for name, weight in WEIGHTS.items())


def rank(
    *,
    selected_text: str,
    start: int,
    end: int,
    selected_sentences: Sequence[Sequence[int]],
    target_text: str,
    target_sentences: Sequence[Sequence[int]],
    target_vectors: np.ndarray,
    encode_tokens: TokenEncoder,
) -> Ranking:
    """Score every sentence of ``target_text`` against ``selected_text[start:end]``.

    Offsets are code points, end-exclusive. ``target_vectors`` are the stored unit
    sentence vectors of ``target_text`` (one row per sentence, same model as
    ``encode_tokens``). The selected side's stored vectors are not needed: the
    phrase vector reads the selection within its own sentence instead.
    """
    found = evidence(
        selected_text=selected_text,
        start=start,
        end=end,
        selected_sentences=selected_sentences,
        target_text=target_text,
        target_sentences=target_sentences,
        target_vectors=target_vectors,
        encode_tokens=encode_tokens,
    )
    if not target_sentences:
        return Ranking(scores=[], closest=[])
    summed = combine(found)
    scores = 1.0 / (1.0 + np.exp(-summed))
    return Ranking(scores=[float(s) for s in scores], closest=confident(summed, found))


def _coverage(query: list[str], target_terms: list[list[str]]) -> np.ndarray:
    """Share of the query's distinct words that each sentence contains."""
    wanted = set(query)
    if not wanted:
        return np.zeros(len(target_terms))
    return np.array([len(wanted & set(words)) / len(wanted) for words in target_terms])


def confident(summed: np.ndarray, found: dict[str, np.ndarray]) -> list[int]:
    """The best-ranked sentences that carry real evidence: similar in meaning, or holding most of the selected words.

    The ranking always orders every sentence; this decides which of them the page
    may point at. A sentence qualifies when its phrase similarity reaches
    MIN_PHRASE_SIMILARITY or its coverage reaches MIN_COVERAGE. The top-ranked
    sentence must qualify, or nothing is pointed at (the brightest shade and the
    first outline never disagree); other qualifying sentences follow while their
    summed evidence (``combine``) is within CLOSE_TO_TOP of its.
    """
    phrase, coverage = found["phrase"], found["coverage"]
    order = [int(i) for i in np.argsort(-np.asarray(summed), kind="stable")]
    evident = [i for i in order if phrase[i] >= MIN_PHRASE_SIMILARITY or coverage[i] >= MIN_COVERAGE]
    if not evident or evident[0] != order[0]:
        return []
    best = summed[order[0]]
    return [i for i in evident if summed[i] >= best - CLOSE_TO_TOP][:MAX_CLOSEST]
