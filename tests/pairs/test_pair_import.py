"""Importing pair files (raw texts, FaithLab's pair format, HaDes rows): valid files, and each bad input with its
message and the database left as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Membership, PairConfig, PairItem, PairOriginal, PerturbedText, Project
from annotate.services.pairs.ingest import PairImportFailed, import_pairs
from tests.pairs.factories_formats import HADES_EXAMPLE, ORIGINAL, PERTURBED, jsonl, pair_line, snapshot

pytestmark = pytest.mark.django_db


def refused(project: Any, files: list[tuple[str, bytes]], fmt: str) -> list[str]:
    """The messages of an import that must fail, after checking that it changed nothing."""
    before = snapshot()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(project, files, fmt)
    assert snapshot() == before
    return caught.value.messages


# Raw texts


def test_raw_texts_become_originals_of_a_new_pairs_project_owned_by_the_importer(admin_user: Any) -> None:
    content = jsonl({"id": "t1", "text": "First text."}, {"id": 2, "text": "Second text."})
    report = import_pairs("fresh", [("texts.jsonl", b"\n" + content + b"\n  \n")], "raw", user=admin_user)
    project = Project.objects.get(slug="fresh")
    assert project.kind == Project.Kind.PAIRS and report.created_project
    assert PairConfig.objects.filter(project=project).exists()
    assert Membership.objects.get(project=project).user == admin_user
    assert list(PairOriginal.objects.filter(project=project).values_list("external_id", "text", "perturbed_at")) == [
        ("t1", "First text.", None), ("2", "Second text.", None)
    ]
    assert (report.originals, report.items) == (2, 0)


def test_raw_id_given_twice_or_already_in_the_project_is_named(pairs_project: Project) -> None:
    import_pairs(pairs_project, [("a.jsonl", jsonl({"id": "t1", "text": "Old."}))], "raw")
    messages = refused(pairs_project, [("b.jsonl", jsonl({"id": "t2", "text": "x"}, {"id": "t2", "text": "y"},
                                                         {"id": "t1", "text": "z"}))], "raw")
    assert messages == [
        "b.jsonl: line 2: field 'id' 't2' was already given on line 1 of b.jsonl",
        "b.jsonl: line 3: field 'id' 't1': project 'pairs' already has an original with this id",
    ]


def test_raw_line_with_an_unknown_field_or_an_empty_text_is_refused(pairs_project: Project) -> None:
    messages = refused(pairs_project, [("r.jsonl", jsonl({"id": 1, "text": "a", "title": "T"},
                                                         {"id": 2, "text": "  "}, {"text": "b"}))], "raw")
    assert messages == [
        "r.jsonl: line 1: unknown field 'title'; a raw line has only id, text",
        "r.jsonl: line 2: field 'text' is empty",
        "r.jsonl: line 3: missing field 'id'",
    ]


# FaithLab's pair format


def test_pair_lines_share_perturbed_texts_by_group_or_by_identical_texts(pairs_project: Project) -> None:
    second_span = {"perturbed_start": 40, "perturbed_end": 47, "perturbed_words": "railway",
                   "original_start": 40, "original_end": 48, "original_words": "footpath"}
    content = jsonl(
        pair_line(item_id="g1", group="text-a", label="H", metadata={"source": "wiki"}, **second_span),
        pair_line(item_id="g2", group="text-a"),
        pair_line(item_id="n1", label="?"),
        pair_line(item_id="n2", label=None, **second_span),
        pair_line(item_id=7, original=None, original_start=None, original_end=..., original_words=...),
        # Export-only keys are accepted and ignored: the item lands in the pool.
        pair_line(item_id="x1", perturbed="Something else entirely.", perturbed_start=0, perturbed_end=9,
                  perturbed_words="Something", votes={"H": 3, "N": 1, "?": 0}, consensus="H", round=2,
                  selection={"method": "random"}),
    )
    report = import_pairs(pairs_project, [("pairs.jsonl", content)], "pairs")
    items = {i.external_id: i for i in PairItem.objects.filter(project=pairs_project).select_related("perturbed")}
    assert list(items) == ["g1", "g2", "n1", "n2", "7", "x1"]
    assert items["g1"].perturbed_id == items["g2"].perturbed_id != items["n1"].perturbed_id
    assert items["n1"].perturbed_id == items["n2"].perturbed_id
    assert len({items[k].perturbed_id for k in ("g1", "n1", "7", "x1")}) == 4
    assert (report.perturbed_texts, report.items, report.labelled, report.pool) == (4, 6, 1, 5)
    # Positions follow the spans' order in the text, not the file's.
    assert (items["g1"].position, items["g2"].position) == (1, 0)
    assert items["g1"].perturbed.group == "text-a" and items["n1"].perturbed.group == ""
    g1 = items["g1"]
    assert (g1.state, g1.label, g1.metadata) == (PairItem.State.LABELLED, "H", {"source": "wiki"})
    assert (g1.original_start, g1.original_end, g1.original_words) == (40, 48, "footpath")
    assert (g1.perturbed_start, g1.perturbed_end, g1.perturbed_words) == (40, 47, "railway")
    assert PERTURBED[40:47] == "railway" and ORIGINAL[40:48] == "footpath"
    assert all(items[k].state == PairItem.State.POOL and items[k].label == "" for k in ("g2", "n1", "n2", "7", "x1"))
    assert items["x1"].selection == {} and items["x1"].round is None
    # One original for the same original text; none for the line without one; marked as perturbed already.
    originals = PairOriginal.objects.filter(project=pairs_project)
    assert list(originals.values_list("external_id", "text")) == [("original-of-g1", ORIGINAL)]
    assert originals.get().perturbed_at is not None
    assert items["7"].perturbed.original is None and items["7"].original_start is None


def test_pair_offsets_count_code_points(pairs_project: Project) -> None:
    line = pair_line(original="Der Zug 🚆 fährt ab.", perturbed="Der Bus 🚆 hält an.", original_start=10,
                     original_end=15, perturbed_start=10, perturbed_end=14, original_words="fährt",
                     perturbed_words="hält")
    import_pairs(pairs_project, [("emoji.jsonl", jsonl(line))], "pairs")
    assert PairItem.objects.get().perturbed_words == "hält"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"perturbed": ...}, "p.jsonl: line 1: missing field 'perturbed'"),
        ({"original_start": ...}, "p.jsonl: line 1: missing field 'original_start'"),
        ({"perturbed_words": "opened"},
         "p.jsonl: line 1: field 'perturbed_words' 'opened' does not match the perturbed text at 11..17, "
         "which is 'closed'"),
        ({"original_words": "opens"},
         "p.jsonl: line 1: field 'original_words' 'opens' does not match the original text at 11..17, "
         "which is 'opened'"),
        ({"perturbed_end": 60},
         "p.jsonl: line 1: field 'perturbed_end' 60 is out of range for the perturbed text of 48 characters"),
        ({"original_start": -1},
         "p.jsonl: line 1: field 'original_start' -1 is out of range for the original text of 49 characters"),
        ({"perturbed_start": 17, "perturbed_words": ...},
         "p.jsonl: line 1: field 'perturbed_end' 17 must be greater than 'perturbed_start' 17"),
        ({"perturbed_start": 11.0}, "p.jsonl: line 1: field 'perturbed_start' must be a whole number, found the number 11.0"),
        ({"original_end": "17"}, "p.jsonl: line 1: field 'original_end' must be a whole number, found the string '17'"),
        ({"label": 2}, "p.jsonl: line 1: field 'label' must be \"H\", \"N\" or \"?\" (or null), found the number 2"),
        ({"label": "h"}, "p.jsonl: line 1: field 'label' must be \"H\", \"N\" or \"?\" (or null), found the string 'h'"),
        ({"item_id": ""}, "p.jsonl: line 1: field 'item_id' must be a non-empty string or a whole number, found an empty string"),
        ({"metadata": [1]}, "p.jsonl: line 1: field 'metadata' must be an object, found a list of 1 item"),
        ({"original": None}, "p.jsonl: line 1: field 'original_start' must be null when 'original' is null"),
        ({"extra": 1},
         "p.jsonl: line 1: unknown field 'extra'; a pairs line has only group, item_id, label, metadata, original, "
         "original_end, original_id, original_start, original_words, perturbed, perturbed_end, perturbed_start, "
         "perturbed_words; put other values in 'metadata'"),
    ],
)
def test_bad_pair_line_is_refused_naming_file_line_and_field(
    pairs_project: Project, changes: dict[str, Any], message: str
) -> None:
    assert refused(pairs_project, [("p.jsonl", jsonl(pair_line(**changes)))], "pairs") == [message]


def test_items_of_one_group_must_agree_on_both_texts(pairs_project: Project) -> None:
    content = jsonl(
        pair_line(item_id="a", group="g"),
        pair_line(item_id="b", group="g", perturbed=PERTURBED.replace("1911", "1912")),
        pair_line(item_id="c", group="g", original=ORIGINAL.replace("1911", "1910")),
    )
    assert refused(pairs_project, [("p.jsonl", content)], "pairs") == [
        "p.jsonl: line 2: field 'perturbed' differs from line 1 of p.jsonl, which has the same group 'g'",
        "p.jsonl: line 3: field 'original' differs from line 1 of p.jsonl, which has the same group 'g'",
    ]


def test_ids_and_groups_already_used_are_refused(pairs_project: Project) -> None:
    import_pairs(pairs_project, [("first.jsonl", jsonl(pair_line(item_id="a", group="g")))], "pairs")
    content = jsonl(pair_line(item_id="b", group="g"), pair_line(item_id="a", group="h"),
                    pair_line(item_id="c", group="k"), pair_line(item_id="c", group="k"))
    assert refused(pairs_project, [("second.jsonl", content)], "pairs") == [
        "second.jsonl: line 1: field 'group' 'g': project 'pairs' already has a perturbed text in this group",
        "second.jsonl: line 2: field 'item_id' 'a' is already in project 'pairs' (imported before?)",
        "second.jsonl: line 4: field 'item_id' 'c' was already given on line 3 of second.jsonl",
    ]


# HaDes rows


def test_hades_example_imports_labelled_and_pool_items_without_originals(pairs_project: Project) -> None:
    report = import_pairs(pairs_project, [("hades_example.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
    items = list(PairItem.objects.filter(project=pairs_project).select_related("perturbed").order_by("id"))
    assert [(i.state, i.label, i.perturbed_words) for i in items] == [
        (PairItem.State.LABELLED, "H", "railway"),
        (PairItem.State.LABELLED, "N", "shut"),
        (PairItem.State.POOL, "", "restoration of the"),
    ]
    lines = HADES_EXAMPLE.read_text().splitlines()
    for number, (item, line) in enumerate(zip(items, lines, strict=True), start=1):
        row = json.loads(line)
        assert item.perturbed.original is None and item.original_start is None
        assert "===" not in item.perturbed.text
        assert item.perturbed.text.split()[row["replaced_ids"][0]] == item.perturbed_words.split()[0]
        assert item.imported_fields == {"format": "hades", "file": "hades_example.jsonl", "line": number,
                                        "row": row, "source_line": line}
    assert (report.items, report.labelled, report.pool, report.originals) == (3, 2, 1, 0)


def test_hades_span_is_the_code_points_of_the_marked_words_and_rows_of_one_text_share_it(
    pairs_project: Project,
) -> None:
    content = jsonl(
        {"replaced": "the  cat ===sat=== down", "replaced_ids": [2, 2], "hallucination": 0},
        {"replaced": "the cat sat ===down===", "replaced_ids": [3, 3], "hallucination": -1},
        {"replaced": "é ===ça va=== bien", "replaced_ids": [1, 2], "hallucination": 1},
    )
    import_pairs(pairs_project, [("h.jsonl", content)], "hades")
    items = list(PairItem.objects.filter(project=pairs_project).select_related("perturbed").order_by("id"))
    assert [(i.perturbed.text, i.perturbed_start, i.perturbed_end, i.position) for i in items] == [
        ("the cat sat down", 8, 11, 0), ("the cat sat down", 12, 16, 1), ("é ça va bien", 2, 7, 0)
    ]
    assert items[0].perturbed_id == items[1].perturbed_id
    assert PerturbedText.objects.filter(project=pairs_project, source=PerturbedText.Source.HADES).count() == 2


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"replaced": "a ===b=== c", "replaced_ids": [1, 2], "hallucination": 1},
         "h.jsonl: line 1: field 'replaced_ids' [1, 2] does not match the === markers, which wrap words 1..1 ('b')"),
        ({"replaced": "a b c", "replaced_ids": [1, 1], "hallucination": 1},
         "h.jsonl: line 1: field 'replaced' has no === markers around the replaced words"),
        ({"replaced": "===a b=== ===c===", "replaced_ids": [0, 1], "hallucination": 1},
         "h.jsonl: line 1: field 'replaced' must mark one span with one opening and one closing ===; "
         "it has 2 opening and 2 closing"),
        ({"replaced": "a b=== ===c", "replaced_ids": [2, 1], "hallucination": 1},
         "h.jsonl: line 1: field 'replaced' has its closing === before the opening one"),
        ({"replaced": "a === b === c", "replaced_ids": [2, 2], "hallucination": 1},
         "h.jsonl: line 1: field 'replaced' has a === marker standing apart from a word; a marker is written "
         "against the word it marks (===word===), so that replaced_ids count the same words with or without it"),
        ({"replaced": "a ===b===", "replaced_ids": [1], "hallucination": 1},
         "h.jsonl: line 1: field 'replaced_ids' must be [first, last], two whole numbers, found a list of 1 item"),
        ({"replaced": "a ===b===", "replaced_ids": [1, 1], "hallucination": 2},
         "h.jsonl: line 1: field 'hallucination' must be 1, 0 or -1, found the number 2"),
        ({"replaced": "a ===b===", "replaced_ids": [1, 1], "hallucination": True},
         "h.jsonl: line 1: field 'hallucination' must be 1, 0 or -1, found true"),
        ({"replaced": "a ===b===", "hallucination": 1}, "h.jsonl: line 1: missing field 'replaced_ids'"),
    ],
)
def test_bad_hades_row_is_refused_naming_file_line_and_field(
    pairs_project: Project, row: dict[str, Any], message: str
) -> None:
    assert refused(pairs_project, [("h.jsonl", jsonl(row))], "hades") == [message]


# Every format: files, projects, many errors at once


def test_malformed_line_and_non_utf8_file_are_named_with_every_other_error(pairs_project: Project) -> None:
    good = {"replaced": "a ===b===", "replaced_ids": [1, 1], "hallucination": 1}
    files = [
        ("one.jsonl", jsonl(good) + b"not json\n[1, 2]\n" + jsonl({**good, "hallucination": 5})),
        ("two.jsonl", "é".encode("latin-1") + b"\n"),
        ("three.jsonl", b"\n\n"),
    ]
    assert refused(pairs_project, files, "hades") == [
        "one.jsonl: line 2: not valid JSON: Expecting value at column 1",
        "one.jsonl: line 3: expected a JSON object, found a list of 2 items",
        "one.jsonl: line 4: field 'hallucination' must be 1, 0 or -1, found the number 5",
        "two.jsonl: not UTF-8 text (invalid continuation byte at byte 0); save it as UTF-8 JSONL",
        "three.jsonl: no rows (the file is empty or holds only blank lines)",
    ]


def test_a_long_list_of_errors_is_capped_and_counted(pairs_project: Project) -> None:
    content = b"{\n" * 150
    before = snapshot()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("many.jsonl", content)], "pairs")
    assert snapshot() == before
    assert len(caught.value.messages) == 100 and caught.value.total == 150
    assert str(caught.value).startswith("150 errors:\nmany.jsonl: line 1: not valid JSON")
    assert str(caught.value).endswith("many.jsonl: line 100: not valid JSON: Expecting property name enclosed in "
                                      "double quotes at column 2\n... and 50 more")


def test_pairs_are_never_imported_into_a_span_project_nor_under_a_bad_slug(project: Project) -> None:
    assert refused(project, [("p.jsonl", jsonl(pair_line()))], "pairs") == [
        "project: 'demo' is a span annotation project; pairs import only into a pairs project "
        "(give a new slug to create one)"
    ]
    assert refused("demo", [("p.jsonl", jsonl(pair_line()))], "pairs")[0].startswith("project: 'demo' is a span")
    assert refused("Bad Slug", [("p.jsonl", jsonl(pair_line()))], "pairs") == [
        "project: slug: 'Bad Slug' is not a valid slug; use lowercase letters and digits, in words joined by single "
        "hyphens (e.g. pilot-study-2)"
    ]
    assert refused("new-one", [("p.jsonl", jsonl(pair_line()))], "csv") == [
        "format: 'csv' is not one of pairs, hades, raw"
    ]


def test_a_failed_import_into_a_new_slug_creates_no_project(db: None) -> None:
    assert refused("new-one", [("p.jsonl", jsonl(pair_line(label="X")))], "pairs") == [
        "p.jsonl: line 1: field 'label' must be \"H\", \"N\" or \"?\" (or null), found the string 'X'"
    ]
    assert not Project.objects.filter(slug="new-one").exists()


def test_ten_thousand_rows_import_in_one_go(pairs_project: Project) -> None:
    rows = [{"replaced": f"row {n} is ===here=== now", "replaced_ids": [3, 3], "hallucination": n % 3 - 1}
            for n in range(10_000)]
    report = import_pairs(pairs_project, [("big.jsonl", jsonl(*rows))], "hades")
    assert (report.items, report.perturbed_texts) == (10_000, 10_000)
    assert PairItem.objects.filter(project=pairs_project, state=PairItem.State.LABELLED).count() == 6666
    assert PairItem.objects.filter(project=pairs_project, label="H").count() == 3333


# The command


def test_import_pairs_command_imports_and_reports(tmp_path: Path, db: None) -> None:
    path = tmp_path / "hades.jsonl"
    path.write_bytes(HADES_EXAMPLE.read_bytes())
    call_command("import_pairs", str(path), "--project", "from-hades", "--format", "hades")
    assert Project.objects.get(slug="from-hades").pair_items.count() == 3
    raw = tmp_path / "raw.jsonl"
    raw.write_bytes(jsonl({"id": "t1", "text": "Hello."}))
    call_command("import_pairs", str(raw), "--project", "from-hades", "--format", "raw")
    assert PairOriginal.objects.get().external_id == "t1"


def test_import_pairs_command_names_every_problem_and_imports_nothing(tmp_path: Path, db: None) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(jsonl(pair_line(perturbed_end=99), pair_line(item_id="i2", label=2)))
    before = snapshot()
    with pytest.raises(CommandError) as caught:
        call_command("import_pairs", str(path), "--project", "cmd")
    assert snapshot() == before
    assert str(caught.value) == (
        f"nothing was imported: 2 errors:\n{path}: line 1: field 'perturbed_end' 99 is out of range for the perturbed "
        f"text of 48 characters\n{path}: line 2: field 'label' must be \"H\", \"N\" or \"?\" (or null), found the number 2"
    )
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_pairs", str(tmp_path / "missing.jsonl"), "--project", "cmd")
