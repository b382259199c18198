"""A HaDes export tokenises each perturbed text once: it checks every item and makes its line in the same pass
(before, each text was tokenised once to check it and again to write it), and still refuses before the first line.

Tokenising is most of a HaDes export's time, so the calls are counted here (the tokeniser wrapped, not replaced).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from annotate.models import PairItem, Project
from annotate.services.export import ExportError
from annotate.services.pairs import export as pair_export
from annotate.services.pairs.hades_text import Token
from annotate.services.pairs.ingest import import_pairs
from tests.pairs.factories_formats import HADES_EXAMPLE, jsonl

pytestmark = pytest.mark.django_db

BRIDGE = "The bridge closed in 1911. It carries a railway."
CLUB = "The club won the cup in May, said the coach."


def span_row(item_id: str, group: str, text: str, words: str) -> dict[str, Any]:
    """A pair-format line marking ``words`` in ``text`` (the same text as original and perturbed)."""
    start = text.index(words)
    return {"item_id": item_id, "group": group, "original": text, "perturbed": text, "original_start": start,
            "original_end": start + len(words), "perturbed_start": start, "perturbed_end": start + len(words)}


def alternating_project(*extra: dict[str, Any]) -> Project:
    """Items of two texts alternating in id order (a hand-written pair file may), then HaDes rows as imported."""
    rows = [span_row("b1", "bridge", BRIDGE, "closed"), span_row("c1", "club", CLUB, "won"),
            span_row("b2", "bridge", BRIDGE, "railway"), span_row("c2", "club", CLUB, "May"), *extra]
    project = import_pairs("alternating", [("pairs.jsonl", jsonl(*rows))], "pairs").project
    import_pairs(project, [("hades.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
    return project


def count_tokenising(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times the export tokenises each text (the round-trip check's own tokenising is not counted)."""
    calls: Counter[str] = Counter()
    real = pair_export.hades_tokens

    def counted(text: str) -> list[Token]:
        calls[text] += 1
        return real(text)

    monkeypatch.setattr(pair_export, "hades_tokens", counted)
    return calls


def lines_one_by_one(project: Project) -> str:
    """Each item's line made on its own (``hades_line``, tokenising its text itself): what the export must give."""
    items = PairItem.objects.filter(project=project).select_related("perturbed").order_by("id")
    return "".join(pair_export.hades_line(item) + "\n" for item in items)


def test_each_text_is_tokenised_once_and_the_file_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    project = alternating_project()
    expected = lines_one_by_one(project)
    calls = count_tokenising(monkeypatch)

    exported = pair_export.export_pairs(project, "hades")

    assert exported == expected
    assert dict(calls) == {BRIDGE: 1, CLUB: 1}  # the imported HaDes rows are written as they came, untokenised
    made = [json.loads(line) for line in exported.splitlines()[:4]]
    assert [row["replaced"].split("===")[1] for row in made] == ["closed", "won", "railway", "may"]
    assert len(exported.splitlines()) == 4 + len(HADES_EXAMPLE.read_bytes().splitlines())


def test_a_text_left_behind_by_more_texts_than_are_kept_is_tokenised_again_with_the_same_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    project = alternating_project()
    expected = lines_one_by_one(project)
    monkeypatch.setattr(pair_export, "TEXTS_KEPT", 1)
    calls = count_tokenising(monkeypatch)
    assert pair_export.export_pairs(project, "hades") == expected
    assert dict(calls) == {BRIDGE: 2, CLUB: 2}


def test_an_item_after_lines_already_made_still_refuses_the_export_and_writes_no_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    odd = "Set x = y now."
    project = alternating_project(span_row("eq", "odd", odd, "="), span_row("ok", "odd", odd, "now"))
    calls = count_tokenising(monkeypatch)
    out = tmp_path / "hades.jsonl"
    with pytest.raises(ExportError) as caught:
        pair_export.write_pairs_export(project, "hades", out)
    assert caught.value.field == "format"
    assert caught.value.detail == (
        "hades cannot carry 1 item of 'alternating' faithfully (the pairs format carries any text): item 'eq': its "
        "span starts or ends with the token '=', which a HaDes reader cannot tell from the === marker written "
        "against it"
    )
    assert not out.exists()
    assert dict(calls) == {BRIDGE: 1, CLUB: 1, odd: 1}  # checked once: no second pass after the refusal


def test_lines_kept_on_disk_come_back_as_they_were_made(monkeypatch: pytest.MonkeyPatch) -> None:
    # A HaDes row as its author wrote it: a carriage return between keys and a raw U+2028 inside a string.
    odd_row = '{"replaced": "the ===tower===\u2028clock .",\r "replaced_ids": [1, 1], "hallucination": 0}\n'
    project = alternating_project()
    import_pairs(project, [("odd.jsonl", odd_row.encode())], "hades")
    expected = lines_one_by_one(project)
    assert expected.endswith(odd_row)
    monkeypatch.setattr(pair_export, "SPOOL_BYTES", 1)  # past the first line, the lines go to a temporary file
    assert pair_export.export_pairs(project, "hades") == expected
