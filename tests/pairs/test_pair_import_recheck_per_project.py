"""A pair import's re-check inside its transaction looks at the rows of its project above the highest ids of that
project read before the checks (write.HighestIds), not above the highest ids of all projects.

On PostgreSQL ids are taken at insert and rows become visible at commit, so the two orders differ: an import into
this project may take its ids, then an import into another project take higher ones and commit first. An import
checked meanwhile read the other project's higher ids as "the highest", and its re-check, looking only above them,
missed the first import's rows once they were committed: their item ids, groups and original ids were written a
second time (an original id then met its unique constraint, with a refusal that names no line). The first tests
lay the ids out as that race leaves them, so they run on SQLite too; the last one runs the race itself:

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \\
        .venv/bin/python -m pytest tests/pairs/test_pair_import_recheck_per_project.py -q -p no:cacheprovider
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connections

from annotate.models import PairConfig, PairItem, PairOriginal, PerturbedText, Project
from annotate.services.pairs.ingest import PairImportFailed, import_pairs, write
from tests.conftest import needs_postgres
from tests.pairs.factories_formats import ORIGINAL, PERTURBED, jsonl, pair_line, snapshot

# Far above any id the tests' sequences reach, so rows placed by hand never meet one (PostgreSQL's sequences do not
# move for an id given explicitly).
HIGH = 10**9

# What the late import's line shares with this import's, and the refusal this import gets for it.
SHARED: dict[str, tuple[dict[str, str], str]] = {
    "item_id": ({"item_id": "taken"}, "field 'item_id' 'taken' is already in project 'pairs' (imported before?)"),
    "group": ({"group": "taken"}, "field 'group' 'taken': project 'pairs' already has a perturbed text in this group"),
    "original_id": (
        {"original_id": "taken"}, "field 'original_id' 'taken': project 'pairs' already has an original with this id"
    ),
}


def place_rows(project: Project, pk: int, *, item_id: str, group: str, original_id: str) -> None:
    """One original, perturbed text and item of ``project``, each with id ``pk``, as a pair import writes them."""
    original = PairOriginal.objects.create(pk=pk, project=project, external_id=original_id, text=ORIGINAL)
    text = PerturbedText.objects.create(pk=pk, project=project, original=original, group=group, text=PERTURBED,
                                        source=PerturbedText.Source.PAIRS)
    PairItem.objects.create(pk=pk, project=project, perturbed=text, external_id=item_id, original_start=11,
                            original_end=17, original_words="opened", perturbed_start=11, perturbed_end=17,
                            perturbed_words="closed")


def own_ids(shared: dict[str, str], who: str) -> dict[str, str]:
    return {"item_id": f"item-{who}", "group": f"group-{who}", "original_id": f"original-{who}", **shared}


@pytest.mark.django_db
@pytest.mark.parametrize("field", list(SHARED))
def test_rows_committed_after_the_checks_under_lower_ids_than_another_projects_are_rechecked(
    pairs_project: Project, monkeypatch: pytest.MonkeyPatch, field: str
) -> None:
    shared, refusal = SHARED[field]
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=elsewhere)
    # The other project's import took the higher ids and committed before this import's checks read them.
    place_rows(elsewhere, HIGH, item_id="far", group="far", original_id="far")
    prepare = write._prepare

    def prepared_then_the_late_import_commits(*args: Any) -> Any:
        prepared = prepare(*args)
        # The import into this project that took its ids first commits only now, after this one's checks.
        place_rows(pairs_project, HIGH - 10, **own_ids(shared, "late"))
        after_late.update(snapshot())
        return prepared

    after_late: dict[str, Any] = {}
    monkeypatch.setattr(write, "_prepare", prepared_then_the_late_import_commits)
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("mine.jsonl", jsonl(pair_line(**own_ids(shared, "mine"))))], "pairs")
    assert caught.value.messages == [f"mine.jsonl: line 1: {refusal}"]
    assert snapshot() == after_late  # nothing of this import


@pytest.mark.django_db
def test_the_highest_ids_are_those_of_the_project(pairs_project: Project) -> None:
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere", kind=Project.Kind.PAIRS)
    place_rows(elsewhere, HIGH, item_id="far", group="far", original_id="far")
    place_rows(pairs_project, HIGH - 10, item_id="near", group="near", original_id="near")
    assert write.HighestIds.read(pairs_project) == write.HighestIds(HIGH - 10, HIGH - 10, HIGH - 10)
    assert write.HighestIds.read(Project.objects.create(name="Empty", slug="empty", kind=Project.Kind.PAIRS)) == (
        write.HighestIds(0, 0, 0)
    )


@pytest.mark.django_db(transaction=True)
@needs_postgres
def test_an_import_into_another_project_committing_meanwhile_does_not_hide_the_late_rows(
    pairs_project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race itself: ``late`` inserts into this project and waits before its commit; an import into another
    project inserts (higher ids) and commits; ``mine`` is checked (``late``'s rows not yet visible), waits for its
    turn behind ``late``, and re-checks once ``late`` committed."""
    elsewhere = Project.objects.create(name="Elsewhere", slug="elsewhere", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=elsewhere)
    late_inserted, mine_checked = threading.Event(), threading.Event()
    analyze, prepare = write.analyze_after_commit, write._prepare
    who = threading.local()

    def inserted(*models: Any) -> None:  # called inside the import's transaction, after its inserts
        analyze(*models)
        if getattr(who, "name", "") == "late":
            late_inserted.set()
            assert mine_checked.wait(30), "mine was never checked"

    def prepared(*args: Any) -> Any:  # called after the checks, before the transaction
        result = prepare(*args)
        if getattr(who, "name", "") == "mine":
            mine_checked.set()
        return result

    monkeypatch.setattr(write, "analyze_after_commit", inserted)
    monkeypatch.setattr(write, "_prepare", prepared)
    outcome: dict[str, str] = {}

    def run(name: str, project_pk: int, content: bytes) -> None:
        who.name = name
        try:
            outcome[name] = import_pairs(Project.objects.get(pk=project_pk), [(f"{name}.jsonl", content)],
                                         "pairs").describe()
        except PairImportFailed as refused:
            outcome[name] = f"refused: {refused}"
        except Exception as error:  # noqa: BLE001  (reported by the test)
            outcome[name] = f"{type(error).__name__}: {error}"
        finally:
            connections.close_all()

    late = threading.Thread(target=run, args=("late", pairs_project.pk, jsonl(pair_line(**own_ids({}, "late")))))
    late.start()
    assert late_inserted.wait(30), outcome
    run("elsewhere", elsewhere.pk, jsonl(pair_line(**own_ids({}, "elsewhere"))))  # higher ids, committed first
    mine = threading.Thread(target=run, args=("mine", pairs_project.pk,
                                              jsonl(pair_line(**own_ids({"item_id": "item-late"}, "mine")))))
    mine.start()
    for thread in (late, mine):
        thread.join(60)
        assert not thread.is_alive(), outcome

    assert outcome["late"].startswith("imported 1 item") and outcome["elsewhere"].startswith("imported 1 item")
    assert outcome["mine"] == (
        "refused: mine.jsonl: line 1: field 'item_id' 'item-late' is already in project 'pairs' (imported before?)"
    )
    assert list(PairItem.objects.filter(project=pairs_project).values_list("external_id", flat=True)) == ["item-late"]
