"""The HaDes export of texts that are not plain English: Chinese and Japanese without spaces, German ß, Turkish İ,
French in NFD, emoji.

Each file is made in FaithLab (a pair-format import), exported as HaDes, and
checked three ways: (a) imported as HaDes and exported again it is the same
bytes; (b) ``replaced_ids`` point at exactly the ``===...===`` tokens; (c) the
tokens ``replaced.split()`` reads are the text's own characters, lower-cased,
none dropped or split inside a character. Items HaDes cannot carry refuse the
whole export, naming each item, and no file is written.
"""

from __future__ import annotations

import json
import unicodedata
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import regex
from django.core.management import CommandError, call_command
from hypothesis import given, settings
from hypothesis import strategies as st

from annotate.models import PairItem, Project
from annotate.services.export import ExportError
from annotate.services.pairs import export as pair_export
from annotate.services.pairs.export import export_pairs
from annotate.services.pairs.hades_text import check_round_trip, hades_tokens
from annotate.services.pairs.ingest import import_pairs
from tests.conftest import login
from tests.pairs.factories_formats import jsonl

NFD_TEXT = unicodedata.normalize("NFD", "L'été à Genève fut chaud.")
NFD_SPAN = unicodedata.normalize("NFD", "Genève")

# (item id, original, perturbed, replaced span of the perturbed text, the HaDes line's "replaced" and "replaced_ids").
WORKED = [
    # Han: one token per character, so the span is marked exactly, not the whole sentence.
    ("zh", "上海是中国最大的城市。", "上海是中国最小的城市。", "小",
     "上 海 是 中 国 最 ===小=== 的 城 市 。", [6, 6]),
    # Kana and Han per character; digits stay one word; the long-vowel mark ー is Kana.
    ("ja-year", "東京タワーは1958年に完成した。", "東京タワーは1968年に完成した。", "1968",
     "東 京 タ ワ ー は ===1968=== 年 に 完 成 し た 。", [6, 6]),
    ("ja-kana", "東京タワーは1958年に完成した。", "東京ドームは1958年に完成した。", "ドーム",
     "東 京 ===ド ー ム=== は 1958 年 に 完 成 し た 。", [2, 4]),
    # Lower-casing only: ß stays ß (case folding would write "ss"), capital ẞ becomes ß.
    ("de", "Die GROẞE Gasse führt zur Brücke.", "Die GROẞE Straße führt zur Brücke.", "GROẞE Straße",
     "die ===große straße=== führt zur brücke .", [1, 2]),
    # Unicode's lower case of İ is i with a combining dot above (U+0307), for every language.
    ("tr", "Ankara'da yağmur yağdı.", "İzmir'de yağmur yağdı.", "İzmir",
     "===i\u0307zmir=== ' de yağmur yağdı .", [0, 0]),
    # NFD stays NFD: each e is followed by its combining accent, as in the text.
    ("fr-nfd", unicodedata.normalize("NFD", "L'été à Lyon fut chaud."), NFD_TEXT, NFD_SPAN,
     unicodedata.normalize("NFD", "l ' été à ===genève=== fut chaud ."), [4, 4]),
    # An emoji is a token of its own, whole: a skin tone, a ZWJ family, a flag, a keycap stay one token.
    ("emoji", "Great match⚽ today #️⃣1 and 👍🏽 from 👨‍👩‍👧 🇫🇷", "Great match🎉 today #️⃣1 and 👍🏽 from 👨‍👩‍👧 🇫🇷",
     "🎉", "great match ===🎉=== today #️⃣ 1 and 👍🏽 from 👨‍👩‍👧 🇫🇷", [2, 2]),
]


def pair_rows(cases: list[tuple[str, ...]] | None = None) -> list[dict[str, Any]]:
    """Pair-format lines for the worked examples: the replaced span at its place in both texts."""
    rows = []
    for item_id, original, perturbed, span, *_ in cases or WORKED:
        start = perturbed.index(span)
        changed = next(i for i, (a, b) in enumerate(zip(original, perturbed, strict=False)) if a != b)
        original_end = changed + (len(original) - len(perturbed)) + (start + len(span) - changed)
        rows.append({"item_id": item_id, "original": original, "perturbed": perturbed,
                     "original_start": changed, "original_end": original_end,
                     "perturbed_start": start, "perturbed_end": start + len(span)})
    return rows


def made_in_faithlab(slug: str = "scripts") -> Project:
    return import_pairs(slug, [("scripts.jsonl", jsonl(*pair_rows()))], "pairs").project


def marked_ids(replaced: str) -> list[int]:
    """The indexes of the first and last ===...=== word of replaced.split()."""
    words = replaced.split()
    return [next(i for i, w in enumerate(words) if w.startswith("===")),
            next(i for i, w in enumerate(words) if w.endswith("==="))]


def assert_tokens_are_the_texts_characters(text: str, replaced: str) -> None:
    """(c): split() gives the text's runs of characters, lower-cased, none dropped, none cut inside a character."""
    words = replaced.replace("===", "").split()
    tokens = hades_tokens(text)
    assert words == [token for _, _, token in tokens]
    assert [text[start:end].lower() for start, end, _ in tokens] == words
    assert "".join(text[start:end] for start, end, _ in tokens) == "".join(text.split())
    for run in regex.finditer(r"\S+", text):  # every token boundary inside a run is a grapheme cluster boundary
        clusters = {m.start() + run.start() for m in regex.finditer(r"\X", run.group())} | {run.end()}
        assert {end for _, end, _ in tokens if run.start() < end <= run.end()} <= clusters


def test_texts_of_other_scripts_export_as_worked_out(db: None) -> None:
    lines = [json.loads(line) for line in export_pairs(made_in_faithlab(), "hades").splitlines()]
    assert [(row["replaced"], row["replaced_ids"], row["hallucination"]) for row in lines] == [
        (replaced, ids, -1) for *_, replaced, ids in WORKED
    ]


def test_the_export_reimports_to_the_same_bytes_and_the_same_spans(db: None) -> None:
    exported = export_pairs(made_in_faithlab(), "hades")
    again = import_pairs("again", [("scripts-hades.jsonl", exported.encode())], "hades").project
    assert export_pairs(again, "hades").encode() == exported.encode()  # (a)
    # The re-imported spans are the made spans, lower-cased: exactly the marked tokens, nothing around them.
    spans = list(PairItem.objects.filter(project=again).order_by("id").values_list("perturbed_words", flat=True))
    assert ["".join(words.split()) for words in spans] == ["".join(span.lower().split()) for *_, span, _, _ in WORKED]


@pytest.mark.parametrize("case", WORKED, ids=[case[0] for case in WORKED])
def test_replaced_ids_point_at_the_marked_tokens_and_split_reads_the_same_words(case: tuple[Any, ...],
                                                                                 db: None) -> None:
    project = import_pairs("one", [("one.jsonl", jsonl(*pair_rows([case])))], "pairs").project
    row = json.loads(export_pairs(project, "hades"))
    assert row["replaced_ids"] == marked_ids(row["replaced"])  # (b)
    assert_tokens_are_the_texts_characters(case[2], row["replaced"])  # (c)


def test_nfc_and_nfd_texts_keep_their_own_form() -> None:
    nfc = unicodedata.normalize("NFC", NFD_TEXT)
    assert [t for _, _, t in hades_tokens(nfc)] == ["l", "'", "été", "à", "genève", "fut", "chaud", "."]
    nfd_tokens = [t for _, _, t in hades_tokens(NFD_TEXT)]
    assert nfd_tokens == [unicodedata.normalize("NFD", t) for t in ["l", "'", "été", "à", "genève", "fut", "chaud", "."]]
    assert nfd_tokens[2] == "e\u0301te\u0301"


def test_a_combining_mark_stays_with_the_punctuation_it_is_written_on() -> None:
    # BERT's split would leave U+0301 a word of its own after the quote; it is part of the quote's character.
    assert [t for _, _, t in hades_tokens("«\u0301Oui»")] == ["«\u0301", "oui", "»"]


def test_thai_is_split_per_character_with_its_vowel_and_tone_marks() -> None:
    assert [t for _, _, t in hades_tokens("เมืองหลวง")] == ["เ", "มื", "อ", "ง", "ห", "ล", "ว", "ง"]


# Letters of several scripts, accents, punctuation, "=", emoji parts and every kind of space, mixed at random.
PIECES = st.sampled_from(list("aZßẞİıΣσςéÉ\u0301\u0307\u0600北京タワーあ한국กำ🎉👍🏽\u200d\ufe0f\u20e3#*1=.,'«» \t\u00a0\u2028\x1c"))


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES | st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=30))
def test_any_text_splits_into_tokens_that_read_back_the_same(pieces: list[str]) -> None:
    text = "".join(pieces)
    tokens = hades_tokens(text)
    check_round_trip(tokens)  # raises if the tokens, written and read back, differ
    assert_tokens_are_the_texts_characters(text, " ".join(token for _, _, token in tokens))


# --- what HaDes cannot carry refuses the export ---------------------------------------------------------------

UNWRITABLE = [
    {"item_id": "eq", "original": "Set x < y now.", "perturbed": "Set x = y now.", "original_start": 6,
     "original_end": 7, "perturbed_start": 6, "perturbed_end": 7},
    {"item_id": "gap", "original": "Two  words.", "perturbed": "Two  words.", "original_start": 3,
     "original_end": 5, "perturbed_start": 3, "perturbed_end": 5},
]


def test_items_hades_cannot_carry_refuse_the_export_naming_each_one(db: None) -> None:
    project = import_pairs("odd", [("odd.jsonl", jsonl(*pair_rows(), *UNWRITABLE))], "pairs").project
    with pytest.raises(ExportError) as caught:
        pair_export.export_lines(project, "hades")  # refused when asked, before any line is made
    assert caught.value.field == "format"
    assert caught.value.detail == (
        "hades cannot carry 2 items of 'odd' faithfully (the pairs format carries any text): "
        "item 'eq': its span starts or ends with the token '=', which a HaDes reader cannot tell from the === "
        "marker written against it; "
        "item 'gap': its span '  ' at 3..5 holds only whitespace, and HaDes marks whole words"
    )
    assert export_pairs(project, "pairs")  # the pair format carries them


def test_a_text_too_long_for_a_hades_import_once_split_is_refused(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    project = import_pairs("zh", [("zh.jsonl", jsonl(*pair_rows(WORKED[:1])))], "pairs").project
    # "上海是中国最小的城市。" is 11 characters; split and marked it is 27, over a limit of 26.
    monkeypatch.setattr(pair_export, "MAX_TEXT_CHARS", 26)
    with pytest.raises(ExportError, match=r": item 'zh': its text split into HaDes tokens, with the === markers, has 27 "
                                          r"characters; a HaDes import takes at most 26$"):
        export_pairs(project, "hades")


def test_the_command_writes_no_file_for_a_refused_export(db: None, tmp_path: Path) -> None:
    import_pairs("odd", [("odd.jsonl", jsonl(*UNWRITABLE))], "pairs")
    out = tmp_path / "odd-hades.jsonl"
    with pytest.raises(CommandError, match=r"^format: hades cannot carry 2 items of 'odd' faithfully .*item 'eq': "):
        call_command("export", "--project", "odd", "--format", "hades", "--out", str(out), stdout=StringIO())
    assert not out.exists()


def test_the_page_and_the_api_answer_the_refusal_instead_of_a_cut_stream(pairs_project: Project,
                                                                        admin_user: Any) -> None:
    import_pairs(pairs_project, [("odd.jsonl", jsonl(UNWRITABLE[0]))], "pairs")
    client = login(admin_user)
    response = client.get("/projects/pairs/pairs/export/hades/")
    assert response.status_code == 302 and response["Location"].endswith("#pair-export")
    html = client.get(response["Location"]).content.decode()
    assert "Nothing was exported: hades cannot carry 1 item of &#x27;pairs&#x27; faithfully" in html
    assert "item &#x27;eq&#x27;: its span starts or ends with the token &#x27;=&#x27;" in html
    api = client.get("/api/projects/pairs/export/?format=hades")
    assert api.status_code == 400
    assert api.json()["format"][0].startswith("hades cannot carry 1 item of 'pairs' faithfully")
    # The pair format is not affected.
    assert client.get("/projects/pairs/pairs/export/pairs/").status_code == 200
