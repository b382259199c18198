"""Agreement on spans and tokens (pure module, no database): span F1 exact and by overlap, summary tokens, and
token-level alpha, by hand and held to straightforward loops (every kind of whitespace, scripts written without
spaces)."""

from __future__ import annotations

import itertools
import random

import krippendorff
import numpy as np
import pytest

from annotate.agreement import (
    BatchSpans,
    _token_bounds,
    pairwise_span_agreement,
    pairwise_span_f1,
    parse_scheme,
    span_f1,
    summary_tokens,
    token_alpha,
)
from tests.annotate.agreement.batches import CODE
from tests.annotate.agreement.reference import straightforward_alpha

# --------------------------------------------------------------------------- spans


SPANS_A = {1: [(0, 5, "U"), (10, 15, "B")]}
SPANS_B = {1: [(0, 5, "U"), (10, 14, "B"), (20, 25, "Q")]}


def test_exact_span_f1_by_hand() -> None:
    result = span_f1(SPANS_A, SPANS_B, "exact")
    overall = result["overall"]
    assert (overall["precision"], overall["recall"]) == pytest.approx((1 / 2, 1 / 3))
    assert overall["f1"] == pytest.approx(0.4)
    assert (overall["spans_a"], overall["spans_b"]) == (2, 3)
    assert result["per_label"]["U"]["f1"] == pytest.approx(1.0)
    assert result["per_label"]["B"]["f1"] == 0.0
    assert result["per_label"]["Q"] == {"precision": None, "recall": 0.0, "f1": 0.0, "spans_a": 0, "spans_b": 1}
    assert list(result["per_label"]) == ["B", "Q", "U"]


def test_overlap_span_f1_by_hand() -> None:
    result = span_f1(SPANS_A, SPANS_B, "overlap")
    assert (result["overall"]["precision"], result["overall"]["recall"]) == pytest.approx((1.0, 2 / 3))
    assert result["overall"]["f1"] == pytest.approx(0.8)
    assert result["per_label"]["B"]["f1"] == pytest.approx(1.0)


def test_span_f1_is_symmetric() -> None:
    for mode in ("exact", "overlap"):
        forward, backward = span_f1(SPANS_A, SPANS_B, mode), span_f1(SPANS_B, SPANS_A, mode)
        assert forward["overall"]["f1"] == pytest.approx(backward["overall"]["f1"])
        assert forward["overall"]["precision"] == pytest.approx(backward["overall"]["recall"])


def test_span_f1_per_label_needs_the_same_category() -> None:
    result = span_f1({1: [(0, 5, "U")]}, {1: [(0, 5, "B")]}, "exact")
    assert result["overall"]["f1"] == pytest.approx(1.0)
    assert result["per_label"]["U"]["f1"] == 0.0


def test_span_f1_compares_within_a_sample_and_ignores_unlabelled_spans() -> None:
    result = span_f1({1: [(0, 5, "U"), (7, 9, None)]}, {2: [(0, 5, "U")]}, "overlap")
    assert result["overall"]["f1"] == 0.0
    assert result["overall"]["spans_a"] == 1
    assert span_f1({}, {}, "exact")["overall"]["f1"] is None
    with pytest.raises(ValueError, match="unknown span mode 'fuzzy'"):
        span_f1({}, {}, "fuzzy")


def test_pairwise_span_f1_covers_every_pair_of_a_batch() -> None:
    spans = BatchSpans("b", ["a", "b", "c"], {1: "x" * 30}, {("a", 1): SPANS_A[1], ("b", 1): SPANS_B[1]})
    entries = {tuple(entry["annotators"]): entry for entry in pairwise_span_f1([spans], "exact")}
    assert set(entries) == {("a", "b"), ("a", "c"), ("b", "c")}
    assert entries[("a", "b")]["overall"]["f1"] == pytest.approx(0.4)
    assert entries[("b", "c")]["overall"]["f1"] == 0.0


def test_summary_tokens_use_code_point_offsets() -> None:
    text = "🌉 bridge  reopened 😀!"
    tokens = summary_tokens(text)
    assert [text[start:end] for start, end in tokens] == ["🌉", "bridge", "reopened", "😀!"]
    assert tokens[0] == (0, 1)


def test_token_alpha_by_hand_with_characters_outside_the_bmp() -> None:
    # Tokens 🌉 | b | c. Annotator a marks "b" as U; annotator b marks "b c" as U, and a benign
    # span over nothing of note. Token values: a = C U C, b = C U U -> (C,C) (U,U) (C,U) = 4/9.
    summary = "🌉 b c"
    spans = BatchSpans(
        "b1",
        ["a", "b"],
        {7: summary},
        {("a", 7): [(2, 3, "U")], ("b", 7): [(2, 5, "U"), (3, 4, "B"), (0, 1, None)]},
    )
    result = token_alpha([spans])
    assert result.alpha == pytest.approx(4 / 9)
    assert (result.units, result.annotators) == (3, 2)
    assert result.per_batch[0]["alpha"] == pytest.approx(4 / 9)


def test_token_alpha_worst_category_wins_on_a_token() -> None:
    spans = BatchSpans(
        "b1", ["a", "b"], {1: "one two"}, {("a", 1): [(0, 3, "B"), (2, 5, "U")], ("b", 1): [(0, 7, "Q")]}
    )
    # a: one -> U (worst of B and U), two -> U; b: Q, Q. With C+B|Q+U everyone agrees: only one value.
    assert token_alpha([spans], "C|B|Q|U").alpha == pytest.approx(
        krippendorff.alpha([[3, 3], [2, 2]], level_of_measurement="nominal")
    )
    merged = token_alpha([spans], "C+B|Q+U")
    assert merged.alpha is None
    assert merged.reason.startswith("only one value occurs: Q+U")




WORDS = ["a", "bb", "🌉", "ccc", "d\u00a0e", "f\u2003g", "\x1c", "h\ti", "\n", "😀!", ""]


def random_span_batches(seed: int, most: int) -> list[BatchSpans]:
    rng = random.Random(seed)
    people = [f"p{index}" for index in range(6)]
    batches = []
    for index in range(rng.randint(1, 6)):
        roster = rng.sample(people, rng.randint(1, most))
        summaries = {key: " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 9))) for key in range(rng.randint(0, 6))}
        spans: dict[tuple[str, object], list] = {}
        for person in people:  # people outside the roster and samples outside the batch are ignored
            for key in [*summaries, "elsewhere"]:
                length = len(summaries.get(key, "xyz")) + 2
                marked = [
                    (start, start + rng.randint(-2, 7), rng.choice(["B", "Q", "U", "C", None]))
                    for start in (rng.randint(0, length) for _ in range(rng.choice([0, 0, 1, 2, 3])))
                ]
                if marked:
                    spans[(person, key)] = marked + ([marked[0]] if rng.random() < 0.2 else [])
        batches.append(BatchSpans(f"s{index}", roster, summaries, spans))
    return batches


def straightforward_token_alpha(batches: list[BatchSpans], scheme: str) -> dict:
    """Token alpha as it was computed: a loop over summaries, annotators and spans, krippendorff per batch."""
    parsed = parse_scheme(scheme)
    lookup = parsed.lookup()
    per_batch, everything = [], []
    for spans in batches:
        roster = list(dict.fromkeys(spans.annotators))
        parts = []
        for key, text in spans.summaries.items():
            tokens = np.array(summary_tokens(text), dtype=np.int64).reshape(-1, 2)
            counts = np.zeros((len(tokens), len(parsed.groups)), dtype=np.int64)
            for annotator in roster:
                codes = np.zeros(len(tokens), dtype=np.int64)
                for start, end, category in spans.spans.get((annotator, key), []):
                    if category is not None:
                        covered = (tokens[:, 0] < end) & (tokens[:, 1] > start)
                        codes[covered] = np.maximum(codes[covered], CODE[category])
                values = lookup[codes]
                for row, value in enumerate(values):
                    if value >= 0:
                        counts[row, value] += 1
            parts.append(counts)
        counts = np.concatenate(parts) if parts else np.zeros((0, len(parsed.groups)), dtype=np.int64)
        everything.append(counts)
        per_batch.append(straightforward_alpha(counts, len(parsed.groups), "nominal"))
    pooled = straightforward_alpha(np.concatenate(everything), len(parsed.groups), "nominal") if everything else None
    return {"alpha": pooled, "per_batch": per_batch}


@pytest.mark.parametrize("most", [3, 5])
def test_token_alpha_equals_the_straightforward_loop(most: int) -> None:
    for seed in range(40):
        batches = random_span_batches(seed, most)
        for scheme in ("C|B|Q|U", "C+B|Q+U", "C|U"):
            fast = token_alpha(batches, scheme)
            slow = straightforward_token_alpha(batches, scheme)
            values = [fast.alpha, *(entry["alpha"] for entry in fast.per_batch)]
            expected = [slow["alpha"], *slow["per_batch"]]
            if most <= 3:
                assert values == expected, (seed, scheme)
            else:
                assert values == [None if value is None else pytest.approx(value, rel=1e-12) for value in expected]


def test_token_bounds_equal_summary_tokens_for_every_kind_of_whitespace() -> None:
    spaces = "".join(chr(code) for code in range(0x3001) if chr(code).isspace())
    texts = ["", " ", "a", f"x{spaces}y", "🌉 b\u00a0c\u2028d", *(" ".join(random.Random(n).choices(WORDS, k=8)) for n in range(20))]
    starts, ends, text_starts = _token_bounds(texts)
    found = [[] for _ in texts]
    for start, end in zip(starts, ends, strict=True):
        text = int(np.searchsorted(text_starts, start, side="right")) - 1
        found[text].append((int(start - text_starts[text]), int(end - text_starts[text])))
    assert found == [summary_tokens(text) for text in texts]


# Words of scripts without spaces (one token a character, marks kept with theirs), beside other words, marks
# opening a run or following a space, CJK punctuation, a middle dot (a Latin token), Hangul (whole words).
SCRIPT_WORDS = [
    "北京", "地铁。", "「安全」", "カﾞ", "น้ำท่วม", "ສະບາຍດີ", "ខ្មែរ", "မြန်မာ", "葛\U000e0100", "ー", "・",
    "new", "2025年", "l·l", "서울", "\u0e48x", "\u0301", "\u200d北", "a\u0301北\u0301b", "😀北", "\n", "", "中\u3000文",
]


def test_token_bounds_equal_summary_tokens_in_scripts_without_spaces(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "北京new 地铁。น้ำa"
    assert [text[start:end] for start, end in summary_tokens(text)] == ["北", "京", "new", "地", "铁", "。", "น้ำ", "a"]
    rng = random.Random(7)
    texts = ["北", "\u0301北", *("".join(rng.choices([*SCRIPT_WORDS, " "], k=rng.randint(0, 12))) for _ in range(300))]
    starts, ends, text_starts = _token_bounds(texts)
    found = [[] for _ in texts]
    for start, end in zip(starts, ends, strict=True):
        text = int(np.searchsorted(text_starts, start, side="right")) - 1
        found[text].append((int(start - text_starts[text]), int(end - text_starts[text])))
    assert found == [summary_tokens(text) for text in texts]
    monkeypatch.setitem(globals(), "WORDS", SCRIPT_WORDS)  # random_span_batches draws its summaries from these
    for seed in range(20):
        batches = random_span_batches(seed, 3)
        for scheme in ("C|B|Q|U", "C+B|Q+U"):
            fast = token_alpha(batches, scheme)
            slow = straightforward_token_alpha(batches, scheme)
            assert [fast.alpha, *(entry["alpha"] for entry in fast.per_batch)] == [slow["alpha"], *slow["per_batch"]]


def straightforward_pairwise_span_f1(batches: list[BatchSpans], mode: str) -> list[dict]:
    """Every pair's span_f1 over the samples of the batches both annotated, as the module used to compute it."""
    mine: dict[tuple[str, str], tuple[dict, dict]] = {}
    for spans in batches:
        for first, second in itertools.combinations(list(dict.fromkeys(spans.annotators)), 2):
            spans_a, spans_b = mine.setdefault((first, second), ({}, {}))
            for key in spans.summaries:
                spans_a[(spans.name, key)] = list(spans.spans.get((first, key), []))
                spans_b[(spans.name, key)] = list(spans.spans.get((second, key), []))
    return [{"annotators": [a, b], **span_f1(sa, sb, mode)} for (a, b), (sa, sb) in mine.items()]


def test_pairwise_span_f1_equals_span_f1_of_each_pair() -> None:
    for seed in range(60):
        batches = random_span_batches(seed, 5)
        for mode in ("exact", "overlap"):
            assert pairwise_span_f1(batches, mode) == straightforward_pairwise_span_f1(batches, mode), (seed, mode)
        both = pairwise_span_agreement(batches)
        assert [{"annotators": entry["annotators"], **entry["overlap"]} for entry in both] == pairwise_span_f1(
            batches, "overlap"
        )

