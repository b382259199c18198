"""The demo pairs project carries guidelines written for its own texts, not the default ones."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from annotate.services.pairs.demo import (
    DEMO_PAIR_GUIDELINES_FILE,
    DEMO_PAIR_JUDGES,
    DEMO_PAIR_LABELERS,
    DEMO_PAIRS_FILE,
    load_pair_demo,
)
from annotate.services.pairs.guidelines import pair_guidelines
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db


def test_the_demo_pairs_labeling_page_shows_the_projects_own_guidelines(admin_user: Any) -> None:
    people = {name: make_user(name) for name in (*DEMO_PAIR_LABELERS, *DEMO_PAIR_JUDGES)}
    project = load_pair_demo(admin_user, people)

    text, is_default = pair_guidelines(project)
    assert not is_default and text == DEMO_PAIR_GUIDELINES_FILE.read_text(encoding="utf-8").strip()
    for kind in ("a changed date (H)", "a swapped name (H)", "a harmless synonym (N)", "an incoherent word (H)"):
        assert kind in text
    html = login(people["alice"]).get(f"/projects/{project.slug}/pairs/label/").content.decode()
    assert 'data-role="default-guidelines"' not in html and "Calder Street Bridge" in html


def test_the_demo_guidelines_quote_the_demo_texts_but_give_away_no_items_answer() -> None:
    text = DEMO_PAIR_GUIDELINES_FILE.read_text(encoding="utf-8")
    rows = [json.loads(line) for line in DEMO_PAIRS_FILE.read_text(encoding="utf-8").splitlines()]
    originals = {row["original"] for row in rows}
    for quoted in re.findall(r'Original: "([^"]+)"', text):
        # Each example's original comes from a demo text ("..." marks words left out).
        assert all(any(part.strip() in original for original in originals) for part in quoted.split("..."))
    # No example's changed words are an item of the demo: the guidelines do not answer an item.
    examples = set(re.findall(r"\[([^\]]+)\]", text))
    assert len(examples) == 4
    assert examples.isdisjoint({row["perturbed_words"] for row in rows})
