"""A project's own HaDes export imported back adds nothing: a row that is the HaDes export of an item made in FaithLab
(perturbed here or imported from a pair file, its text lower-cased and tokenised) is an item already in the project,
left out with skip_existing and refused, by line and field, without it."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from annotate.models import PairItem, PairOriginal, PerturbedText, Project
from annotate.services.pairs.demo import DEMO_PAIRS_FILE
from annotate.services.pairs.export import export_pairs
from annotate.services.pairs.ingest import PairImportFailed, import_pairs, write
from tests.conftest import login
from tests.pairs.factories_formats import HADES_EXAMPLE, jsonl, pair_line, snapshot

pytestmark = pytest.mark.django_db

PIPELINE_TEXT = "Mount Rainier erupted in 1890, said Dr. Smith."


def demo_like_project(project: Project) -> int:
    """The demo's 72 pair-format items, the HaDes example's 3 rows and one perturbed item: 76 items, one decided."""
    import_pairs(project, [("demo_pairs.jsonl", DEMO_PAIRS_FILE.read_bytes())], "pairs")
    import_pairs(project, [("hades_example.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
    original = PairOriginal.objects.create(project=project, external_id="rainier",
                                           text="Mount Rainier erupted in 1894, said Dr. Smith.")
    text = PerturbedText.objects.create(project=project, original=original, text=PIPELINE_TEXT,
                                        source=PerturbedText.Source.PIPELINE)
    PairItem.objects.create(project=project, perturbed=text, perturbed_start=25, perturbed_end=29,
                            perturbed_words="1890", original_start=25, original_end=29, original_words="1894")
    # A judged item: its export says 1, the key does not depend on the label.
    PairItem.objects.filter(project=project, external_id="demo-1").update(state=PairItem.State.CONSENSUS, label="H")
    return PairItem.objects.filter(project=project).count()


def test_the_export_of_a_demo_like_project_imports_back_as_nothing_with_skip_existing(
    pairs_project: Project,
) -> None:
    count = demo_like_project(pairs_project)
    exported = export_pairs(pairs_project, "hades").encode()
    lines = exported.decode().splitlines()
    assert len(lines) == count == 76
    assert '"replaced": "mount rainier erupted in ===1890=== , said dr . smith ."' in exported.decode()
    report = import_pairs(pairs_project, [("export.jsonl", exported)], "hades", skip_existing=True)
    assert (report.items, report.perturbed_texts, report.originals) == (0, 0, 0)
    assert [line.number for line in report.skipped] == list(range(1, count + 1))
    assert report.describe().endswith(f"left out {count} rows already imported (export.jsonl: lines 1-{count})")
    assert PairItem.objects.filter(project=pairs_project).count() == count


def test_without_skip_existing_each_exported_row_is_refused_by_line_and_field(pairs_project: Project) -> None:
    count = demo_like_project(pairs_project)
    exported = export_pairs(pairs_project, "hades").encode()
    by_id = dict(PairItem.objects.filter(project=pairs_project).values_list("pk", "external_id"))
    first_hades = PairItem.objects.filter(project=pairs_project, perturbed__source="hades").order_by("pk").first()
    assert first_hades is not None
    before = snapshot()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("export.jsonl", exported)], "hades")
    assert snapshot() == before
    failure = caught.value
    assert failure.total == count and failure.already_imported == count
    # Export order is id order: line n is the n-th item.
    external_ids = [by_id[pk] for pk in sorted(by_id)]
    assert failure.messages[0] == (
        f"export.jsonl: line 1: this row is already in project 'pairs': it is the HaDes export of item "
        f"{external_ids[0]!r} (that item's text lower-cased and split into HaDes words, the same words marked: "
        "fields replaced and replaced_ids)"
    )
    assert failure.messages[72] == (
        f"export.jsonl: line 73: this row is already in project 'pairs': item {first_hades.pk}, imported from line 1 "
        "of hades_example.jsonl, has the same text and replaced span (fields replaced and replaced_ids)"
    )
    perturbed = max(by_id)  # the perturbed item, last made, has no external id
    assert failure.messages[-1] == (
        f"export.jsonl: line {count}: this row is already in project 'pairs': it is the HaDes export of item "
        f"{perturbed} (that item's text lower-cased and split into HaDes words, the same words marked: "
        "fields replaced and replaced_ids)"
    )


def test_another_span_of_an_exported_text_is_a_new_item(pairs_project: Project) -> None:
    demo_like_project(pairs_project)
    new = {"replaced": "mount ===rainier=== erupted in 1890 , said dr . smith .", "replaced_ids": [1, 1],
           "hallucination": -1}
    report = import_pairs(pairs_project, [("new.jsonl", jsonl(new))], "hades", skip_existing=True)
    assert report.items == 1 and report.skipped == []


def test_the_command_and_the_upload_form_leave_the_export_out(pairs_project: Project, admin_user: Any,
                                                              tmp_path: Path) -> None:
    count = demo_like_project(pairs_project)
    path = tmp_path / "export.jsonl"
    path.write_text(export_pairs(pairs_project, "hades"), encoding="utf-8")
    out = StringIO()
    call_command("import_pairs", str(path), "--project", "pairs", "--format", "hades", "--skip-existing", stdout=out)
    assert out.getvalue().startswith("imported 0 items (0 labelled, 0 in the pool) in 0 perturbed texts")
    html = login(admin_user).post(
        "/projects/pairs/pairs/import/",
        {"format": "hades", "files": [SimpleUploadedFile("export.jsonl", path.read_bytes())], "skip_existing": "on"},
        follow=True,
    ).content.decode()
    assert f"left out {count} rows already imported (export.jsonl: lines 1-{count})" in html
    assert PairItem.objects.filter(project=pairs_project).count() == count


def test_an_item_another_import_adds_meanwhile_is_recognised_inside_the_transaction(
    pairs_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pair line's HaDes export, read before the pair item exists: the re-check inside the transaction finds it.
    row = {"replaced": "the bridge ===closed=== in 1911 . it carries a railway .", "replaced_ids": [2, 2],
           "hallucination": -1}
    prepare = write._prepare

    def prepared_then_imported_elsewhere(*args: Any) -> Any:
        prepared = prepare(*args)
        monkeypatch.setattr(write, "_prepare", prepare)
        import_pairs(pairs_project, [("other.jsonl", jsonl(pair_line(item_id="made-here")))], "pairs")
        return prepared

    monkeypatch.setattr(write, "_prepare", prepared_then_imported_elsewhere)
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("mine.jsonl", jsonl(row))], "hades")
    assert caught.value.messages == [
        "mine.jsonl: line 1: this row is already in project 'pairs': it is the HaDes export of item 'made-here' "
        "(that item's text lower-cased and split into HaDes words, the same words marked: fields replaced and "
        "replaced_ids)"
    ]
    assert list(PairItem.objects.filter(project=pairs_project).values_list("external_id", flat=True)) == [
        "made-here"]


def test_letters_of_a_text_and_of_its_hades_form_are_the_same_for_every_code_point() -> None:
    # The check tokenises only texts with a parsed text's letters: lower-casing then case-folding a character must
    # give its own case fold, or an export's row would be missed.
    import sys

    different = [code for code in range(sys.maxunicode + 1) if not 0xD800 <= code <= 0xDFFF
                 and chr(code).lower().casefold() != chr(code).casefold()]
    assert different == []
