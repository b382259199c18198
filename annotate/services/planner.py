"""Fresh planner statistics after a bulk write, on PostgreSQL.

PostgreSQL plans a query from statistics that autovacuum refreshes once enough
rows changed, up to a minute later. Right after an import or a round draw
(thousands of items added or changed at once) the statistics still describe
the tables as they were (for a new project: empty), and the planner may pick
a nested loop that reads every judgement of a judge for each open item: the
queue's queries then take 20-40 ms instead of 1-3 ms (measured on the pairs
queue, docs/performance.md). So the writes that change many rows at once ask
for ANALYZE of the tables they touched, once their transaction has committed
(uncommitted rows are invisible to it). SQLite plans without such statistics:
nothing to do there.
"""

from __future__ import annotations

import logging

from django.db import connection, models, transaction

log = logging.getLogger(__name__)


def analyze_after_commit(*tables: type[models.Model]) -> None:
    """Refresh PostgreSQL's statistics of these models' tables when the current transaction commits (at once
    outside one). A failure is logged, never raised: the write it follows has succeeded."""
    if connection.vendor != "postgresql" or not tables:
        return
    names = sorted({model._meta.db_table for model in tables})

    def analyze() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE " + ", ".join(connection.ops.quote_name(name) for name in names))
        except Exception:  # statistics are an optimisation: autovacuum will refresh them anyway
            log.warning("ANALYZE of %s failed", ", ".join(names), exc_info=True)

    transaction.on_commit(analyze)
