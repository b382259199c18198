"""The item factory makes items whose spans hold the words they name."""

from __future__ import annotations

from annotate.models import PairItem, Project
from tests.pairs.conftest import make_pair_items


def test_factory_items_hold_their_words_in_both_texts(pairs_project: Project) -> None:
    items = make_pair_items(pairs_project, 5)
    for item in items:
        original = item.perturbed.original.text
        assert original[item.original_start:item.original_end] == item.original_words
        assert item.perturbed.text[item.perturbed_start:item.perturbed_end] == item.perturbed_words
        assert item.state == PairItem.State.OPEN and item.judges_needed == 4
    assert {item.round.number for item in items} == {1}
