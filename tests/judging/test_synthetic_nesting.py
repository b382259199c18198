"""Nested percentage sets of synthetic hallucinations: seeded, stable, nested, code-point exact (pure functions)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judging.synthetic import (
    ineligibility,
    marked_pieces,
    percent_steps,
    plan_items,
    replace_spans,
    replacement_order,
    rewrite_problem,
)

ROOT = Path(__file__).resolve().parents[2]

# Five sentences, with an emoji (one code point, two UTF-16 units) and accents before later sentences, so a
# replacement computed in UTF-16 units or bytes would land in the wrong place.
TEXT = "The bridge 🌉 reopened. Café owners cheered. Traffic is slow. The mayor spoke. Repairs cost 12 M€."
SENTENCES = ["The bridge 🌉 reopened.", "Café owners cheered.", "Traffic is slow.", "The mayor spoke.",
             "Repairs cost 12 M€."]
SPANS = []
_cursor = 0
for _sentence in SENTENCES:
    _start = TEXT.index(_sentence, _cursor)
    SPANS.append([_start, _start + len(_sentence)])
    _cursor = _start + len(_sentence)
REWRITES = {
    "intrinsic": {0: "The tunnel 🚇 reopened.", 1: "Café owners protested.", 2: "Traffic is fast.",
                  3: "The governor spoke.", 4: "Repairs cost 15 M€."},
    "extrinsic": {0: "The bridge 🌉 reopened after a storm.", 1: "Café owners, 40 of them, cheered.",
                  2: "Traffic is slow, police said.", 3: "The mayor spoke in Paris.",
                  4: "Repairs cost 12 M€, a record."},
}


def test_spans_are_code_points_and_emoji_counts_as_one():
    assert SPANS[0] == [0, 22]  # "🌉" is one code point here; in UTF-16 the sentence would be 23 long
    assert SPANS[1][0] == 23
    assert [TEXT[start:end] for start, end in SPANS] == SENTENCES


def test_order_is_seeded_and_fixed_across_processes():
    # Values worked out once and written down: a change of algorithm (or a salted hash) would change them.
    assert replacement_order(0, "s1", "intrinsic", 5) == [0, 4, 1, 3, 2]
    assert replacement_order(0, "s1", "extrinsic", 5) == [4, 2, 3, 0, 1]
    assert replacement_order(7, "s1", "intrinsic", 5) == [3, 2, 4, 0, 1]
    code = "from judging.synthetic import replacement_order as r; print(r(0, 's1', 'intrinsic', 5))"
    for hash_seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                             check=True).stdout.strip()
        assert out == "[0, 4, 1, 3, 2]"


def test_order_is_a_permutation_that_depends_on_seed_sample_and_type():
    orders = {(seed, key, kind): tuple(replacement_order(seed, key, kind, 5))
              for seed in range(3) for key in ("a", "b", "c") for kind in ("intrinsic", "extrinsic")}
    assert all(sorted(order) == [0, 1, 2, 3, 4] for order in orders.values())
    assert len(set(orders.values())) > 6  # 18 draws of 120 permutations: not all the same


def test_percent_steps_are_0_to_100_by_20():
    assert percent_steps(5) == [0, 20, 40, 60, 80, 100]


def test_items_are_nested_and_cover_every_percent():
    items = plan_items(TEXT, SPANS, REWRITES, seed=3, sample_key="sample-9")
    assert [(item.type, item.percent) for item in items] == [("gold", 0)] + [
        (kind, percent) for kind in ("intrinsic", "extrinsic") for percent in (20, 40, 60, 80, 100)]
    assert items[0].text == TEXT and items[0].replaced == ()
    for kind in ("intrinsic", "extrinsic"):
        typed = [item for item in items if item.type == kind]
        for smaller, larger in zip(typed, typed[1:], strict=False):
            assert set(smaller.replaced) < set(larger.replaced)
            assert larger.replaced[: len(smaller.replaced)] == smaller.replaced
        assert len(typed[-1].replaced) == 5
        assert list(typed[-1].replaced) == replacement_order(3, "sample-9", kind, 5)


def test_item_text_replaces_exactly_the_chosen_sentences():
    items = plan_items(TEXT, SPANS, REWRITES, seed=3, sample_key="sample-9")
    for item in items[1:]:
        expected = " ".join(REWRITES[item.type][i] if i in item.replaced else SENTENCES[i] for i in range(5))
        assert item.text == expected


def test_replace_spans_with_emoji_by_hand():
    replaced = replace_spans(TEXT, SPANS, {0: "A 🚀 rose.", 3: "Nobody spoke."})
    assert replaced == "A 🚀 rose. Café owners cheered. Traffic is slow. Nobody spoke. Repairs cost 12 M€."


def test_marked_pieces_join_to_the_item_text():
    pieces = marked_pieces(TEXT, SPANS, REWRITES["intrinsic"], [4, 1])
    assert "".join(str(piece["text"]) for piece in pieces) == replace_spans(
        TEXT, SPANS, {4: REWRITES["intrinsic"][4], 1: REWRITES["intrinsic"][1]})
    marked = [(piece["sentence"], piece["order"]) for piece in pieces if piece["order"]]
    assert marked == [(1, 2), (4, 1)]


def test_a_type_missing_one_rewrite_gets_no_items():
    partial = {"intrinsic": {i: REWRITES["intrinsic"][i] for i in range(4)}, "extrinsic": REWRITES["extrinsic"]}
    items = plan_items(TEXT, SPANS, partial, seed=0, sample_key="x")
    assert {item.type for item in items} == {"gold", "extrinsic"}


def test_only_outputs_with_exactly_n_sentences_are_eligible():
    assert ineligibility(5) is None
    assert ineligibility(3) == "has 3 sentences, not 5"
    assert ineligibility(1, 5) == "has 1 sentence, not 5"
    assert ineligibility(4, 4) is None


@pytest.mark.parametrize(("rewritten", "problem"), [
    ("", "the rewrite is empty"),
    ("   ", "the rewrite is empty"),
    ("Traffic is  slow. ", "the rewrite is identical to the original sentence"),
    (None, '"rewritten" is not text (got NoneType)'),
    (7, '"rewritten" is not text (got int)'),
    ("Traffic is fast.", None),
])
def test_rewrite_problems(rewritten, problem):
    assert rewrite_problem("Traffic is slow.", rewritten) == problem
