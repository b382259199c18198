"""Synthetic hallucination sets: LLM rewrites of gold sentences, nested percentage items, and the paper's tables.

A set is created with its outputs fixed (one gold item per eligible output),
then executed in the background: the writer endpoint rewrites every sentence
of every output once per type, and the items are built from the rewrites.

- sets: creating a set, building its items from stored rewrites
- rewrite: executing a set against the writer endpoint (resumption, the lock file)
- cancel: an admin's cancel of a queued or running set (it can be resumed afterwards)
- ingest: a set from rewrites written elsewhere (JSONL import)
- tables: the set's summary and the paper's tables
"""

from __future__ import annotations

from judging.services.synthetic.cancel import SetCancelled, cancel_synthetic_set, kept_in_words
from judging.services.synthetic.ingest import IMPORT_PROBLEMS_SHOWN, import_rewrites
from judging.services.synthetic.rewrite import (
    REWRITE_SYSTEM,
    RewriteOutcome,
    execute_new_set,
    execute_synthetic_set,
    execution_lock,
    is_set_executing,
    resume_stale_synthetic_sets,
    resume_synthetic_set,
    write_rewrite,
)
from judging.services.synthetic.sets import (
    SyntheticSetError,
    build_items,
    create_synthetic_set,
    output_sentences,
    sample_key,
)
from judging.services.synthetic.tables import latest_runs, paper_tables, synthetic_summary, table_rows

__all__ = [
    "IMPORT_PROBLEMS_SHOWN",
    "REWRITE_SYSTEM",
    "RewriteOutcome",
    "SetCancelled",
    "SyntheticSetError",
    "build_items",
    "cancel_synthetic_set",
    "create_synthetic_set",
    "execute_new_set",
    "execute_synthetic_set",
    "execution_lock",
    "import_rewrites",
    "is_set_executing",
    "kept_in_words",
    "latest_runs",
    "output_sentences",
    "paper_tables",
    "resume_stale_synthetic_sets",
    "resume_synthetic_set",
    "sample_key",
    "synthetic_summary",
    "table_rows",
    "write_rewrite",
]
