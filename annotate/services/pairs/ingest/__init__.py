"""Importing pair files into a ``pairs`` project: raw texts to perturb, FaithLab's pair format, HaDes release files.

Imports are all-or-nothing: every file is read and checked before the first
row is written, the writes run in one transaction, and every problem found
(up to a hundred) is reported at once, each naming the file, the line and the
field. The formats are described in the modules ``raw``, ``pairs`` and
``hades`` of this package.
"""

from __future__ import annotations

from annotate.services.pairs.ingest.lines import PairImportFailed
from annotate.services.pairs.ingest.write import FORMATS, ImportReport, import_pairs

__all__ = ["FORMATS", "ImportReport", "PairImportFailed", "import_pairs"]
