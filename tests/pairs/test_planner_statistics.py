"""After a bulk write, PostgreSQL's planner statistics describe the tables as they are (annotate.services.planner).

Without them the pairs queue's queries plan as if the tables were empty and take 10-40 times longer until
autovacuum comes by (docs/performance.md). ``last_analyze`` counts only explicit ANALYZE (autovacuum writes
``last_autoanalyze``), so these tests see the app's own refresh, and they commit (``transaction=True``): ANALYZE
runs once the import's transaction has committed.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from django.db import connection

from annotate.models import PairItem, PairOriginal, Project
from annotate.services.pairs.ingest import import_pairs
from annotate.services.pairs.ingest.lines import PairImportFailed
from annotate.services.planner import analyze_after_commit
from tests.conftest import needs_postgres


def last_analyze(model: type) -> datetime | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s", [model._meta.db_table])
        return cursor.fetchone()[0]


def now() -> datetime:
    with connection.cursor() as cursor:
        cursor.execute("SELECT clock_timestamp()")
        return cursor.fetchone()[0]


def hades_rows(count: int) -> bytes:
    rows = [{"replaced": f"the bridge number {n} was ===closed=== in may .", "replaced_ids": [5, 5],
             "hallucination": n % 2} for n in range(count)]
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_committed_pairs_import_refreshes_the_statistics_of_the_tables_it_filled() -> None:
    began = now()
    report = import_pairs("stats", [("rows.jsonl", hades_rows(30))], "hades")
    assert PairItem.objects.filter(project=report.project).count() == 30
    for model in (PairItem, PairOriginal):
        analyzed = last_analyze(model)
        assert analyzed is not None and analyzed >= began, model.__name__


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_a_failed_write_asks_for_nothing() -> None:
    """ANALYZE follows a commit only: an import refused before writing leaves the statistics alone."""
    before = last_analyze(PairItem)
    with pytest.raises(PairImportFailed):
        import_pairs("stats", [("rows.jsonl", b"not json\n")], "hades")
    assert not Project.objects.filter(slug="stats").exists()
    assert last_analyze(PairItem) == before


@pytest.mark.django_db
def test_only_postgresql_is_asked_to_analyze(django_capture_on_commit_callbacks) -> None:
    """SQLite plans without such statistics: no callback there; one on PostgreSQL, for after the commit."""
    with django_capture_on_commit_callbacks() as callbacks:
        analyze_after_commit(PairItem)
    assert len(callbacks) == (1 if connection.vendor == "postgresql" else 0)
