"""Two pair imports into one project at the same moment, with the same group, item or original id, on PostgreSQL.

Only original ids have a unique constraint, so before imports took turns the
same group or item id in two racing imports was written twice (neither
transaction's re-check saw the other's uncommitted rows), and the same original
id ended in a refusal that named no line. Now the second import waits for the
first to commit and is refused by its re-check like any import whose ids are
taken: the file, line and field, and nothing of it written.

Run with PostgreSQL (SQLite runs one write transaction at a time):

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \\
        .venv/bin/python -m pytest tests/pairs/test_pair_import_races.py -q -p no:cacheprovider
"""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import PairItem, PairOriginal, PerturbedText, Project
from annotate.services import projects
from annotate.services.pairs.ingest import PairImportFailed, import_pairs, write
from tests.conftest import needs_postgres
from tests.pairs.factories_formats import jsonl, pair_line
from tests.races import race, slowed

pytestmark = [pytest.mark.django_db(transaction=True), needs_postgres]

IMPORTERS = ("ann", "bob")

# What each importer's one line shares with the other's, and the refusal the second one gets.
SHARED: dict[str, tuple[dict[str, str], str]] = {
    "item_id": ({"item_id": "same"}, "field 'item_id' 'same' is already in project 'pairs' (imported before?)"),
    "group": ({"group": "same"}, "field 'group' 'same': project 'pairs' already has a perturbed text in this group"),
    "original_id": (
        {"original_id": "same"}, "field 'original_id' 'same': project 'pairs' already has an original with this id"
    ),
}


def line_of(importer: str, shared: dict[str, str]) -> bytes:
    """One pair line whose ids are the importer's own, except those in ``shared``."""
    ids = {"item_id": f"item-{importer}", "group": f"group-{importer}", "original_id": f"original-{importer}"}
    return jsonl(pair_line(**{**ids, **shared}))


def import_as(importer: str, project_pk: int, shared: dict[str, str]) -> str:
    return import_pairs(Project.objects.get(pk=project_pk), [(f"{importer}.jsonl", line_of(importer, shared))],
                        "pairs").describe()


@pytest.mark.parametrize("field", list(SHARED))
def test_of_two_imports_racing_with_the_same_id_the_second_is_refused_by_line_and_writes_nothing(
    pairs_project: Project, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    shared, refusal = SHARED[field]
    # Between the transaction's start and its re-check: without the turn, both re-checks run before either commits.
    slowed(monkeypatch, write, "_recheck_added_since", 0.5)
    outcome = race([lambda who=who: import_as(who, pairs_project.pk, shared) for who in IMPORTERS], PairImportFailed)

    assert len(outcome.done) == 1 and len(outcome.refused) == 1, outcome
    loser = next(who for who in IMPORTERS if outcome.refused[0].startswith(f"{who}.jsonl"))
    winner = next(who for who in IMPORTERS if who != loser)
    assert outcome.refused == [f"{loser}.jsonl: line 1: {refusal}"]
    # The winner's rows, none of the loser's.
    items = PairItem.objects.filter(project=pairs_project)
    assert list(items.values_list("external_id", flat=True)) == [shared.get("item_id", f"item-{winner}")]
    assert list(PerturbedText.objects.filter(project=pairs_project).values_list("group", flat=True)) == [
        shared.get("group", f"group-{winner}")
    ]
    assert list(PairOriginal.objects.filter(project=pairs_project).values_list("external_id", flat=True)) == [
        shared.get("original_id", f"original-{winner}")
    ]


def test_imports_with_different_ids_at_once_are_both_written(pairs_project: Project,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    slowed(monkeypatch, write, "_recheck_added_since", 0.3)
    outcome = race([lambda who=who: import_as(who, pairs_project.pk, {}) for who in IMPORTERS], PairImportFailed)
    assert len(outcome.done) == 2 and not outcome.refused
    assert sorted(PairItem.objects.filter(project=pairs_project).values_list("external_id", flat=True)) == [
        "item-ann", "item-bob"
    ]


def test_two_imports_creating_the_same_new_project_at_once_give_one_project_and_a_refusal(
    admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both find the slug free before their transactions; the second's insert meets the first's project.
    slowed(monkeypatch, projects, "create_project", 0.3)

    def create(importer: str) -> str:
        return import_pairs("fresh", [(f"{importer}.jsonl", line_of(importer, {}))], "pairs", admin_user).describe()

    outcome = race([lambda who=who: create(who) for who in IMPORTERS], PairImportFailed)
    assert len(outcome.done) == 1 and len(outcome.refused) == 1, outcome
    assert outcome.refused[0].startswith("project: ")
    assert "'fresh'" in outcome.refused[0] and "nothing was imported" in outcome.refused[0]
    assert PairItem.objects.filter(project__slug="fresh").count() == 1
