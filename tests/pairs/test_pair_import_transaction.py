"""A pair import's transaction only inserts: checks and rows are made before it, so it holds SQLite's lock briefly."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.models import PairItem, Project
from annotate.services.pairs.ingest import PairImportFailed, import_pairs, write
from tests.pairs.factories_formats import HADES_EXAMPLE, jsonl, pair_line, snapshot

pytestmark = pytest.mark.django_db


def hades_rows(count: int, prefix: str) -> bytes:
    """``count`` HaDes rows, four marking different words of each perturbed text (its first word ``prefix``)."""
    rows = []
    for number in range(count):
        words = f"{prefix} {number // 4} tells of the bridge over the river and its cables".split()
        index = number % 4
        words[index] = f"==={words[index]}==="
        rows.append({"replaced": " ".join(words), "replaced_ids": [index, index], "hallucination": number % 2})
    return jsonl(*rows)


def pair_rows(count: int, prefix: str) -> bytes:
    """``count`` pair-format lines, each with an original and perturbed text of its own ('opened' -> 'closed')."""
    lines = []
    for number in range(count):
        start = len(f"Text {number}. The bridge ")
        lines.append(pair_line(
            item_id=f"{prefix}-item-{number}", original_id=f"{prefix}-original-{number}",
            original=f"Text {number}. The bridge opened in 1911.", perturbed=f"Text {number}. The bridge closed in 1911.",
            original_start=start, original_end=start + 6, perturbed_start=start, perturbed_end=start + 6,
        ))
    return jsonl(*lines)


def statements_in_transaction(project: Project, content: bytes, fmt: str) -> list[str]:
    """The SQL the import runs inside its own transaction (a savepoint here: the test runs in a transaction)."""
    with CaptureQueriesContext(connection) as queries:
        import_pairs(project, [("rows.jsonl", content)], fmt)
    sql = [query["sql"] for query in queries.captured_queries]
    opened = next(index for index, text in enumerate(sql) if text.startswith("SAVEPOINT"))
    name = sql[opened].split()[-1]
    closed = sql.index(f"RELEASE SAVEPOINT {name}")
    return sql[opened + 1 : closed]


@pytest.mark.parametrize(("fmt", "rows"), [("hades", hades_rows), ("pairs", pair_rows)])
def test_the_import_transaction_runs_as_many_statements_for_1200_rows_as_for_3(
    pairs_project: Project, fmt: str, rows: Any
) -> None:
    # Rows already in the project: the transaction re-checks against what was added since the checks ran.
    import_pairs(pairs_project, [("first.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
    few = statements_in_transaction(pairs_project, rows(3, "few"), fmt)
    many = statements_in_transaction(pairs_project, rows(1200, "many"), fmt)
    assert PairItem.objects.filter(project=pairs_project).count() == 3 + 3 + 1200
    # Django logs an executemany as "<n> times: INSERT ...".
    kinds = [text.split(" times: ", 1)[-1].split()[0] for text in many]
    assert len(many) == len(few), kinds
    # A few re-check reads (one a table), none per row; the rest inserts.
    assert kinds.count("SELECT") <= 5, kinds
    assert set(kinds) <= {"SELECT", "INSERT"}, kinds


def test_a_hades_row_another_import_added_since_the_checks_is_refused_inside(
    pairs_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare = write._prepare

    def prepared_then_imported_elsewhere(*args: Any) -> Any:
        prepared = prepare(*args)
        monkeypatch.setattr(write, "_prepare", prepare)  # the other import runs as usual
        import_pairs(pairs_project, [("other.jsonl", HADES_EXAMPLE.read_bytes())], "hades")
        return prepared

    monkeypatch.setattr(write, "_prepare", prepared_then_imported_elsewhere)
    before = PairItem.objects.filter(project=pairs_project).count()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("mine.jsonl", HADES_EXAMPLE.read_bytes())], "hades", skip_existing=True)
    other = list(PairItem.objects.filter(project=pairs_project).order_by("id").values_list("pk", flat=True))
    assert len(other) == before + 3  # the other import's rows, none of this one's
    assert caught.value.messages == [
        f"mine.jsonl: line {number}: this row is already in project 'pairs': item {pk}, imported from line "
        f"{number} of other.jsonl, has the same text and replaced span (fields replaced and replaced_ids)"
        for number, pk in zip((1, 2, 3), other[before:], strict=True)
    ]
    assert caught.value.already_imported == 3


def test_an_item_id_another_import_took_since_the_checks_is_refused_inside(
    pairs_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare = write._prepare

    def prepared_then_imported_elsewhere(*args: Any) -> Any:
        prepared = prepare(*args)
        monkeypatch.setattr(write, "_prepare", prepare)  # the other import runs as usual
        import_pairs(pairs_project, [("other.jsonl", jsonl(pair_line(item_id="taken", group="g-other")))], "pairs")
        after_other.update(snapshot())
        return prepared

    after_other: dict[str, Any] = {}
    monkeypatch.setattr(write, "_prepare", prepared_then_imported_elsewhere)
    mine = jsonl(pair_line(item_id="free"), pair_line(item_id="taken", perturbed="Another text, 11 to 17 here.",
                                                      perturbed_start=0, perturbed_end=7, perturbed_words="Another"))
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("mine.jsonl", mine)], "pairs")
    assert caught.value.messages == [
        "mine.jsonl: line 2: field 'item_id' 'taken' is already in project 'pairs' (imported before?)"
    ]
    assert snapshot() == after_other  # the other import's rows, nothing of this one
    assert [external_id for _, external_id, _, _ in after_other["items"]] == ["taken"]
