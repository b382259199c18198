"""Exporting pairs projects: HaDes files come back byte for byte, the pair format carries the judging results and
imports again to the same items, and the export command writes one JSONL file."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotate.models import PairItem, PairJudgement, PairRound, Project
from annotate.services.export import ExportError
from annotate.services.pairs.export import export_pairs, hades_row, hades_tokens
from annotate.services.pairs.ingest import import_pairs
from tests.conftest import make_user
from tests.pairs.conftest import ORIGINAL as FACTORY_ORIGINAL
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_formats import HADES_EXAMPLE, jsonl, pair_line

pytestmark = pytest.mark.django_db


def rows(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_hades_example_exports_back_byte_for_byte(db: None) -> None:
    content = HADES_EXAMPLE.read_bytes()
    report = import_pairs("hades", [("hades_example.jsonl", content)], "hades")
    assert export_pairs(report.project, "hades").encode() == content


def test_hades_rows_keep_their_own_spelling_extra_keys_and_order(db: None) -> None:
    # Compact separators, escaped and raw non-ASCII, a float and an extra key: nothing is normalised on the way.
    content = (
        '{"replaced":"caf\\u00e9 ===noir===","replaced_ids":[1,1],"hallucination":1,"score":1.50}\n'
        '{"hallucination": -1, "replaced_ids": [0, 0], "replaced": "===été=== chaud", "idx": 7}\n'
        '{"replaced": "caf\\u00e9 noir ===fort===", "replaced_ids": [2, 2], "hallucination": 0}\n'
    ).encode()
    report = import_pairs("hades", [("odd.jsonl", content)], "hades")
    assert export_pairs(report.project, "hades").encode() == content


def test_hades_row_judged_in_faithlab_gets_its_consensus(db: None) -> None:
    report = import_pairs("hades", [("hades_example.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
    PairItem.objects.filter(project=report.project, state=PairItem.State.POOL).update(
        state=PairItem.State.CONSENSUS, label="N"
    )
    lines = export_pairs(report.project, "hades").splitlines()
    expected = HADES_EXAMPLE.read_text().splitlines()
    assert lines[:2] == expected[:2]
    assert json.loads(lines[2]) == {**json.loads(expected[2]), "hallucination": 0}


def test_other_items_are_written_in_hades_form_with_the_words_the_span_touches_marked() -> None:
    assert hades_row("The Bridge  opened in 1911.", 12, 18, 1) == {
        "replaced": "the bridge ===opened=== in 1911 .", "replaced_ids": [2, 2], "hallucination": 1
    }
    # A span inside words marks the whole words it touches.
    assert hades_row("The Bridge opened in 1911.", 6, 13, -1) == {
        "replaced": "the ===bridge opened=== in 1911 .", "replaced_ids": [1, 2], "hallucination": -1
    }


@pytest.mark.parametrize(("text", "span", "replaced", "ids"), [
    # Punctuation is a token of its own, as in the HaDes release and DESIGN.md's example ("western side .").
    ("It will stay, they said.", "stay", "it will ===stay=== , they said .", [2, 2]),
    ("The shop closed for repairs.", "repairs", "the shop closed for ===repairs=== .", [4, 4]),
    # A span that takes the punctuation with it marks the punctuation token too.
    ("The shop closed for repairs.", "repairs.", "the shop closed for ===repairs .===", [4, 5]),
    # Inside words: "U.S.", "19-year-old", "O'Neil's", "37.5%", quotes and a Unicode dash; "£100m" is one token.
    ("The U.S. team's 19-year-old won £100m (37.5%) \u2014 \u201cwow\u201d.", "19-year-old",
     "the u . s . team ' s ===19 - year - old=== won £100m ( 37 . 5 % ) \u2014 \u201c wow \u201d .", [8, 12]),
    ("Led by O'Neil's crew.", "O'Neil's", "led by ===o ' neil ' s=== crew .", [2, 6]),
    # Accents are kept; only case is folded.
    ("Café Noir, Zürich.", "Zürich", "café noir , ===zürich=== .", [3, 3]),
])
def test_faithlab_items_are_tokenised_as_the_hades_release_is(text: str, span: str, replaced: str,
                                                                ids: list[int]) -> None:
    start = text.index(span)
    row = hades_row(text, start, start + len(span), 0)
    assert row == {"replaced": replaced, "replaced_ids": ids, "hallucination": 0}
    # replaced_ids index replaced.split() with or without the markers, as DESIGN.md says.
    unmarked = replaced.replace("===", "").split()
    assert len(unmarked) == len(replaced.split())
    assert " ".join(unmarked[ids[0]:ids[1] + 1]) == " ".join(hades_tokens(span)[i][2] for i in range(len(
        hades_tokens(span))))
    # Tokenising is idempotent: the exported text, tokenised again, is the same tokens.
    assert [token for _, _, token in hades_tokens(" ".join(unmarked))] == unmarked


def test_separators_python_splits_at_are_token_boundaries_too() -> None:
    # str.split() splits at U+001C..U+001F; BertPreTokenizer alone would keep "a\x1cb" one token.
    row = hades_row("Keep a\x1cb here.", 5, 8, -1)
    assert row["replaced"] == "keep ===a b=== here ." and row["replaced_ids"] == [1, 2]


def test_pairs_project_exports_to_hades_form_with_consensus_labels(pairs_project: Project) -> None:
    items = make_pair_items(pairs_project, 3, round_number=None)
    PairItem.objects.filter(pk=items[0].pk).update(state=PairItem.State.CONSENSUS, label="H")
    PairItem.objects.filter(pk=items[1].pk).update(state=PairItem.State.NO_CONSENSUS)
    exported = rows(export_pairs(pairs_project, "hades"))
    # "Ines Varga" -> "Tom Price" in the third sentence (tokens 15 and 16); "March" -> "June" (token 20).
    assert exported[0] == {
        "replaced": "the bridge opened in 1911 . it carries two lanes and a footpath . mayor ===tom price=== "
                    "reopened it in march .",
        "replaced_ids": [15, 16], "hallucination": 1,
    }
    assert exported[1]["replaced_ids"] == [20, 20] and exported[1]["hallucination"] == -1
    assert exported[1]["replaced"].endswith(" ===june=== .")
    assert exported[2]["hallucination"] == -1
    # And that file is a HaDes file the importer takes.
    again = import_pairs("again", [("x.jsonl", export_pairs(pairs_project, "hades").encode())], "hades")
    assert [i.perturbed_words for i in again.project.pair_items.order_by("id")] == ["tom price", "june", "closed"]


def test_a_hades_export_of_faithlab_items_imports_back_to_the_same_items_and_exports_the_same(
    pairs_project: Project,
) -> None:
    items = make_pair_items(pairs_project, 8, round_number=None)
    PairItem.objects.filter(pk=items[0].pk).update(state=PairItem.State.CONSENSUS, label="H")
    PairItem.objects.filter(pk=items[1].pk).update(state=PairItem.State.LABELLED, label="N")
    exported = export_pairs(pairs_project, "hades")
    again = import_pairs("again", [("x.jsonl", exported.encode())], "hades").project

    def picture(project: Project) -> list[tuple[Any, ...]]:
        """Each item as HaDes sees it: its text's tokens, its span's tokens, its label (a consensus imports as one)."""
        rows = []
        for item in PairItem.objects.filter(project=project).select_related("perturbed").order_by("id"):
            tokens = hades_tokens(item.perturbed.text)
            span = [t for s, e, t in tokens if s < item.perturbed_end and e > item.perturbed_start]
            rows.append(([t for _, _, t in tokens], span, item.label))
        return rows

    assert picture(again) == picture(pairs_project)
    # The made texts end sentences with full stops: the export splits every one off its word.
    assert all(re.search(r"\w[.,]", row["replaced"]) is None and row["replaced"].endswith(" .")
               for row in rows(exported))
    assert [label for _, _, label in picture(again)][:3] == ["H", "N", ""]
    assert export_pairs(again, "hades") == exported
    # The imported items' own texts, tokenised again, give the very same lines (nothing rests on the kept line).
    for item in PairItem.objects.filter(project=again).select_related("perturbed").order_by("id"):
        line = json.loads(item.imported_fields["source_line"])
        remade = hades_row(item.perturbed.text, item.perturbed_start, item.perturbed_end, line["hallucination"])
        assert remade == line


def test_pair_export_imports_again_to_the_same_items(db: None) -> None:
    content = jsonl(
        pair_line(item_id="g1", group="text-a", label="H", metadata={"source": "wiki"}, perturbed_start=40,
                  perturbed_end=47, perturbed_words="railway", original_start=40, original_end=48,
                  original_words="footpath"),
        pair_line(item_id="g2", group="text-a"),
        pair_line(item_id="solo", original_id="orig-9", label="N"),
    )
    first = import_pairs("first", [("p.jsonl", content)], "pairs").project
    import_pairs(first, [("h.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
    exported = export_pairs(first, "pairs")
    second = import_pairs("second", [("export.jsonl", exported.encode())], "pairs").project

    def picture(project: Project) -> list[tuple[Any, ...]]:
        return [
            (i.perturbed.text, i.perturbed.original.text if i.perturbed.original else None,
             i.perturbed.original.external_id if i.perturbed.original else None, i.position,
             i.original_start, i.original_end, i.original_words, i.perturbed_start, i.perturbed_end,
             i.perturbed_words, i.state, i.label, i.metadata)
            for i in PairItem.objects.filter(project=project).select_related("perturbed__original").order_by("id")
        ]

    assert picture(second) == picture(first)
    ids = list(PairItem.objects.filter(project=second).values_list("external_id", flat=True))
    first_hades = PairItem.objects.filter(project=first, external_id="").order_by("id")
    assert ids == ["g1", "g2", "solo"] + [f"item-{i.pk}" for i in first_hades]
    groups = [row["group"] for row in rows(exported)]
    assert groups[:2] == ["text-a", "text-a"] and len(set(groups)) == 5
    # The same items export to the same lines, but for the generated ids and groups.
    assert export_pairs(second, "pairs").splitlines()[:3] == exported.splitlines()[:3]


def test_pair_export_carries_votes_consensus_round_and_selection(pairs_project: Project, alice: Any, bob: Any,
                                                                 admin_user: Any, charlie: Any) -> None:
    judged, pooled, split = make_pair_items(pairs_project, 3)
    PairItem.objects.filter(pk=judged.pk).update(state=PairItem.State.CONSENSUS, label="H")
    PairItem.objects.filter(pk=pooled.pk).update(state=PairItem.State.POOL, round=None, selection={})
    PairItem.objects.filter(pk=split.pk).update(state=PairItem.State.NO_CONSENSUS)
    now = timezone.now()
    dave, erin = make_user("dave"), make_user("erin")

    def judge(item: PairItem, user: Any, label: str, *, counted: bool = True) -> None:
        PairJudgement.objects.create(
            item=item, judge=user, round=item.round, label=label, served_at=now - timedelta(seconds=30),
            answered_at=now if label else None, seconds=30 if label else None, counted=counted,
        )

    judge(judged, alice, "H")
    judge(judged, bob, "H")
    judge(judged, admin_user, "N")
    judge(judged, charlie, "?")
    judge(judged, dave, "")  # served, not answered: not a vote
    judge(judged, erin, "N", counted=False)  # a blocked judge's vote does not count
    judge(split, alice, "H")
    judge(split, bob, "N")
    exported = {row["item_id"]: row for row in rows(export_pairs(pairs_project, "pairs"))}
    assert {k: exported["i0"][k] for k in ("votes", "consensus", "round", "selection", "label")} == {
        "votes": {"H": 2, "N": 1, "?": 1}, "consensus": "H", "round": 1, "selection": {"method": "random"},
        "label": None,
    }
    assert {k: exported["i1"][k] for k in ("votes", "consensus", "round", "selection")} == {
        "votes": {"H": 0, "N": 0, "?": 0}, "consensus": None, "round": None, "selection": None,
    }
    assert (exported["i2"]["votes"], exported["i2"]["consensus"]) == ({"H": 1, "N": 1, "?": 0}, "none")
    # No answer past the four the item needed: every vote decided it.
    assert (exported["i0"]["deciding_votes"], exported["i0"]["extra_votes"]) == (
        {"H": 2, "N": 1, "?": 1}, {"H": 0, "N": 0, "?": 0})
    assert exported["i0"] | {"votes": None, "deciding_votes": None, "extra_votes": None} == {
        "item_id": "i0", "original_id": "o0", "group": f"text-{judged.perturbed_id}", "original": FACTORY_ORIGINAL,
        "perturbed": judged.perturbed.text, "original_start": judged.original_start,
        "original_end": judged.original_end, "perturbed_start": judged.perturbed_start,
        "perturbed_end": judged.perturbed_end, "original_words": "Ines Varga", "perturbed_words": "Tom Price",
        "label": None, "metadata": {}, "votes": None, "deciding_votes": None, "extra_votes": None,
        "consensus": "H", "round": 1, "selection": {"method": "random"},
    }
    assert PairRound.objects.get(project=pairs_project).number == 1


def test_export_refuses_a_span_project_and_an_unknown_format(project: Project, pairs_project: Project) -> None:
    with pytest.raises(ExportError, match="'pairs' is for pairs projects; 'demo' is a span annotation project"):
        export_pairs(project, "pairs")
    with pytest.raises(ExportError, match="'csv' is not a pairs format; choose one of pairs, hades"):
        export_pairs(pairs_project, "csv")


def test_export_command_writes_one_jsonl_file_for_a_pairs_project(tmp_path: Path, db: None) -> None:
    source = tmp_path / "in.jsonl"
    source.write_bytes(HADES_EXAMPLE.read_bytes())
    call_command("import_pairs", str(source), "--project", "hades", "--format", "hades")
    out = tmp_path / "out" / "hades.jsonl"
    call_command("export", "--project", "hades", "--format", "hades", "--out", str(out))
    assert out.read_bytes() == HADES_EXAMPLE.read_bytes()
    pairs_out = tmp_path / "pairs.jsonl"
    call_command("export", "--project", "hades", "--format", "pairs", "--out", str(pairs_out))
    assert [row["perturbed_words"] for row in rows(pairs_out.read_text())] == ["railway", "shut", "restoration of the"]


def test_export_command_names_the_formats_that_fit_the_project(tmp_path: Path, project: Project,
                                                               pairs_project: Project) -> None:
    with pytest.raises(CommandError) as caught:
        call_command("export", "--project", "pairs", "--format", "faithbench", "--out", str(tmp_path / "x"))
    assert str(caught.value) == "--format: faithbench does not apply to 'pairs', a pairs project; its formats are pairs, hades"
    with pytest.raises(CommandError) as caught:
        call_command("export", "--project", "demo", "--format", "hades", "--out", str(tmp_path / "x.jsonl"))
    assert str(caught.value) == (
        "--format: hades does not apply to 'demo', a span annotation project; its formats are faithbench, jsonl, csv"
    )
    with pytest.raises(CommandError, match="is a directory; the pairs format writes one JSONL file"):
        call_command("export", "--project", "pairs", "--format", "pairs", "--out", str(tmp_path))
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x").exists()
