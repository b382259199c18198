"""A HaDes row already in the project refuses the import (file and line named), or is left out and listed on request."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotate.models import PairItem, PerturbedText, Project
from annotate.services.pairs.export import export_pairs
from annotate.services.pairs.ingest import PairImportFailed, import_pairs
from tests.conftest import login
from tests.pairs.factories_formats import HADES_EXAMPLE, jsonl, pair_line, snapshot

pytestmark = pytest.mark.django_db

IMPORT_URL = "/projects/pairs/pairs/import/"
# A row of the example's second text with another span marked: a new item, not a repeat.
NEW_ROW = {
    "replaced": "priya okafor is a civil engineer who has worked for the morrowfield city council since 2015 . she "
                "===studied=== at the university of leeds . in 2024 she led the restoration of the town hall clock "
                "tower .",
    "replaced_ids": [18, 18],
    "hallucination": 0,
}


def example_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in HADES_EXAMPLE.read_text(encoding="utf-8").splitlines()]


def refused(project: Any, files: list[tuple[str, bytes]], **options: Any) -> PairImportFailed:
    """The failure of an import that must change nothing."""
    before = snapshot()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(project, files, "hades", **options)
    assert snapshot() == before
    return caught.value


def test_importing_the_same_hades_file_again_is_refused_naming_each_line(pairs_project: Project) -> None:
    import_pairs(pairs_project, [("hades_example.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
    first = list(PairItem.objects.filter(project=pairs_project).order_by("id").values_list("pk", flat=True))
    failure = refused(pairs_project, [("again.jsonl", HADES_EXAMPLE.read_bytes())])
    assert failure.messages == [
        f"again.jsonl: line {number}: this row is already in project 'pairs': item {pk}, imported from line "
        f"{number} of hades_example.jsonl, has the same text and replaced span (fields replaced and replaced_ids)"
        for number, pk in zip((1, 2, 3), first, strict=True)
    ]
    # HaDes rows carry no original text: the refusal names only what a HaDes row has.
    assert not any("original" in message for message in failure.messages)
    assert failure.already_imported == 3
    assert PairItem.objects.filter(project=pairs_project).count() == 3


def test_a_file_with_old_and_new_rows_is_refused_for_the_old_ones_only(pairs_project: Project) -> None:
    rows = example_rows()
    import_pairs(pairs_project, [("h.jsonl", jsonl(*rows[:2]))], "hades")
    # Line 1 is new (another span of a known text would be too), lines 2 and 4 were imported, line 3 is new.
    failure = refused(pairs_project, [("more.jsonl", jsonl(NEW_ROW, rows[1], rows[2], rows[0]))])
    assert [message.split(": this row")[0] for message in failure.messages] == [
        "more.jsonl: line 2", "more.jsonl: line 4"]
    assert failure.total == 2


def test_a_row_a_file_holds_twice_is_kept_twice_and_exported_back_as_given(pairs_project: Project) -> None:
    # Repeats within one import are the file's own data: only rows already in the project are refused.
    given = HADES_EXAMPLE.read_bytes() + HADES_EXAMPLE.read_bytes().splitlines(keepends=True)[2]
    report = import_pairs("twice", [("a.jsonl", given)], "hades")
    assert PairItem.objects.filter(project=report.project).count() == len(example_rows()) + 1
    assert export_pairs(report.project, "hades").encode() == given


def test_skip_existing_leaves_the_old_rows_out_and_lists_them(pairs_project: Project) -> None:
    rows = example_rows()
    import_pairs(pairs_project, [("h.jsonl", jsonl(*rows[:2]))], "hades")
    texts_before = PerturbedText.objects.filter(project=pairs_project).count()
    report = import_pairs(pairs_project, [("more.jsonl", jsonl(rows[0], rows[1], rows[2], NEW_ROW, rows[2]))],
                          "hades", skip_existing=True)
    # Lines 1 and 2 were imported before; line 5 repeats line 3 of this file, which is the file's own data.
    assert [line.number for line in report.skipped] == [1, 2]
    assert (report.items, report.labelled, report.pool, report.perturbed_texts) == (3, 1, 2, 1)
    assert report.describe() == (
        "imported 3 items (1 labelled, 2 in the pool) in 1 perturbed text, 0 originals, into 'pairs'; "
        "left out 2 rows already imported (more.jsonl: lines 1-2)"
    )
    # No perturbed text is made for the rows left out; line 5 is kept as the file gives it, beside line 3.
    assert PerturbedText.objects.filter(project=pairs_project).count() == texts_before + 1
    spans = sorted(PairItem.objects.filter(project=pairs_project).values_list("perturbed_words", flat=True))
    assert spans == ["railway", "restoration of the", "restoration of the", "shut", "studied"]
    again = import_pairs(pairs_project, [("more.jsonl", jsonl(*rows, NEW_ROW))], "hades", skip_existing=True)
    assert again.items == 0 and len(again.skipped) == 4
    assert PairItem.objects.filter(project=pairs_project).count() == 5


def test_skip_existing_is_for_hades_files_only(pairs_project: Project) -> None:
    before = snapshot()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("p.jsonl", jsonl(pair_line()))], "pairs", skip_existing=True)
    assert caught.value.messages == [
        "skip_existing: only for HaDes files, whose rows have no ids; pairs rows already in the project are "
        "refused by their ids"
    ]
    assert snapshot() == before


def test_the_command_refuses_a_second_import_and_skips_with_the_option(tmp_path: Path, db: None) -> None:
    path = tmp_path / "hades.jsonl"
    path.write_bytes(HADES_EXAMPLE.read_bytes())
    call_command("import_pairs", str(path), "--project", "h", "--format", "hades", stdout=StringIO())
    before = snapshot()
    with pytest.raises(CommandError) as caught:
        call_command("import_pairs", str(path), "--project", "h", "--format", "hades")
    assert snapshot() == before
    message = str(caught.value)
    assert message.startswith("nothing was imported: 3 errors:\n")
    for number in (1, 2, 3):
        assert f"{path}: line {number}: this row is already in project 'h': item " in message
    assert message.endswith("\n--skip-existing imports the other rows and leaves out those already imported")
    out = StringIO()
    call_command("import_pairs", str(path), "--project", "h", "--format", "hades", "--skip-existing", stdout=out)
    assert out.getvalue() == (
        "imported 0 items (0 labelled, 0 in the pool) in 0 perturbed texts, 0 originals, into 'h'; "
        f"left out 3 rows already imported ({path}: lines 1-3)\n"
    )
    assert Project.objects.get(slug="h").pair_items.count() == 3


def test_the_upload_form_refuses_a_second_import_and_skips_when_ticked(pairs_project: Project,
                                                                        admin_user: Any) -> None:
    client = login(admin_user)
    client.post(IMPORT_URL, {"format": "hades", "files": [SimpleUploadedFile("h.jsonl", HADES_EXAMPLE.read_bytes())]})
    assert PairItem.objects.filter(project=pairs_project).count() == 3
    html = client.post(IMPORT_URL, {"format": "hades", "files": [SimpleUploadedFile("h.jsonl",
                                                                                   HADES_EXAMPLE.read_bytes())]},
                       follow=True).content.decode()
    assert "Nothing was imported: 3 errors." in html
    assert "h.jsonl: line 2: this row is already in project &#x27;pairs&#x27;" in html
    assert "To import the other rows, tick &#x27;Leave out rows already imported&#x27;." in html
    assert PairItem.objects.filter(project=pairs_project).count() == 3
    upload = SimpleUploadedFile("h.jsonl", jsonl(*example_rows(), NEW_ROW))
    html = client.post(IMPORT_URL, {"format": "hades", "files": [upload], "skip_existing": "on"},
                       follow=True).content.decode()
    assert ("Imported 1 item (1 labelled, 0 in the pool) in 1 perturbed text, 0 originals, into &#x27;pairs&#x27;; "
            "left out 3 rows already imported (h.jsonl: lines 1-3).") in html
    assert PairItem.objects.filter(project=pairs_project).count() == 4
    assert 'name="skip_existing"' in client.get("/projects/pairs/").content.decode()
