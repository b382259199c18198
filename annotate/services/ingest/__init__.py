"""Importing samples: FaithBench batch files and a simple JSONL of unannotated samples.

Imports are all-or-nothing: every file is parsed and checked before the first
row is written, and the writes run in one transaction. Every error names the
file, the sample and the field. Values bound for length-limited columns
(names, ids, generators) are checked against the column's limit here, so an
over-long value is the same clear error on every database.

Annotators: FaithBench's ``annotator_id`` is local to a batch, so people are
matched by ``annotator_name`` by default (``by-name``). Different people who
share a name ("New User") then become one annotator; the report lists every
name that carries several ids so the importer can choose ``by-id`` instead:
one user per (name, annotator_id), named e.g. "New User (a3ac)".

Usernames are compared ignoring case, as the members page compares them: the
report's ``case_merges`` names every spelling that went to an account written
otherwise ("BOB" to the member "bob") or that shared one with another spelling
("New User" and "new user").
"""

from __future__ import annotations

from annotate.services.ingest.annotators import (
    ANNOTATOR_MATCHING,
    BY_ID,
    BY_NAME,
    IMPORTED_AS,
    SHORT_ID,
    AnnotatorIdConflict,
    CaseMerge,
    _short_ids,
    annotator_id_conflicts,
    annotator_usernames,
)
from annotate.services.ingest.checks import MAX_TEXT_CHARS, ImportFailed, ImportProblems, max_length, username_limit
from annotate.services.ingest.faithbench import (
    ABSENT_KEYS,
    FAITHBENCH_ANNOTATION_KEYS,
    parse_faithbench,
    passage_key_for,
)
from annotate.services.ingest.parsed import ParsedBatch, ParsedSample, ParsedSpan
from annotate.services.ingest.samples import parse_samples_jsonl
from annotate.services.ingest.write import (
    FORMATS,
    ImportReport,
    import_batches,
    import_files,
    parse_roster,
    parse_upload,
)

# What callers use as ``ingest.<name>``: the readers, the write step, the error and the constants they pass.
__all__ = [
    "ABSENT_KEYS",
    "ANNOTATOR_MATCHING",
    "BY_ID",
    "BY_NAME",
    "FAITHBENCH_ANNOTATION_KEYS",
    "FORMATS",
    "IMPORTED_AS",
    "MAX_TEXT_CHARS",
    "SHORT_ID",
    "AnnotatorIdConflict",
    "CaseMerge",
    "ImportFailed",
    "ImportProblems",
    "ImportReport",
    "ParsedBatch",
    "ParsedSample",
    "ParsedSpan",
    "_short_ids",
    "annotator_id_conflicts",
    "annotator_usernames",
    "import_batches",
    "import_files",
    "max_length",
    "parse_faithbench",
    "parse_roster",
    "parse_samples_jsonl",
    "parse_upload",
    "passage_key_for",
    "username_limit",
]
