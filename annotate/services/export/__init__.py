"""Exporting labeled datasets: FaithBench batch files, JSONL (a sample a line), CSV (a span a row).

Exports stream: samples are read in chunks with their spans, and written as
they are read, so memory stays flat however large the project. Spans that
came from a FaithBench file are written back with the values they were read
with (annot_id, annotator_id, raw note, quoted spans, extra keys), so a
FaithBench export of an imported file gives the file back. What the importer
would otherwise read differently is written too (a ``roster``, the generator
as ``metadata.summarizer``), so a re-import gives the same figures.

Modules: ``options`` (formats, checked options, names), ``reading`` (samples
in chunks, annotator names), ``faithbench`` (batch files), ``archive`` (the
streamed zip), ``lines`` (JSONL and CSV), ``jobs`` (files on disk, the
background job).
"""

from __future__ import annotations

from annotate.services.export.archive import faithbench_zip_chunks
from annotate.services.export.faithbench import (
    faithbench_annotation,
    faithbench_files,
    faithbench_sample,
    write_faithbench,
)
from annotate.services.export.jobs import (
    cancel_export_job,
    export_to_path,
    exports_dir,
    run_export_job,
    start_export,
)
from annotate.services.export.lines import CSV_COLUMNS, csv_lines, jsonl_lines
from annotate.services.export.options import (
    CONTENT_TYPES,
    FORMAT_NAMES,
    FORMATS,
    ROUND_NAMES,
    UTF8_BOM,
    ExportError,
    ExportOptions,
    Format,
    bom_refusal,
    describe_options,
    download_name,
    export_rounds,
    export_stem,
)

# What callers use as ``export.<name>``: the options and their names, each format's writer, the background job.
__all__ = [
    "CONTENT_TYPES",
    "CSV_COLUMNS",
    "FORMATS",
    "FORMAT_NAMES",
    "ROUND_NAMES",
    "UTF8_BOM",
    "ExportError",
    "ExportOptions",
    "Format",
    "bom_refusal",
    "cancel_export_job",
    "csv_lines",
    "describe_options",
    "download_name",
    "export_rounds",
    "export_stem",
    "export_to_path",
    "exports_dir",
    "faithbench_annotation",
    "faithbench_files",
    "faithbench_sample",
    "faithbench_zip_chunks",
    "jsonl_lines",
    "run_export_job",
    "start_export",
    "write_faithbench",
]
