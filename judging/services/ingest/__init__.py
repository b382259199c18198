"""Importing judge outputs made elsewhere: JSONL, one judgement a line, into imported judges of a span project.

A line names its sample by external id (``"sample"``, with ``"batch"`` when the
id repeats across batches, as FaithBench ids do) or by its texts (``"source"``
and ``"output"``, equal to the passage text and the summary exactly), the judge
by name, and its number: ``"score"`` (an integer 1..5) or ``"p"`` (0..1, an
NLI-style P(consistent)). Optional: ``"reasoning"``, ``"latency"`` (seconds),
``"input_tokens"``, ``"output_tokens"``, ``"cost"`` (US dollars),
``"sentence_scores"`` (one figure or null per output sentence, as the
sentence splitter cuts the summary, in the line's own scale: the audit page
shades the output's sentences with them) and
``"status"``: ``ok`` (the default), or ``parse_error`` / ``error`` with the
judge's ``"raw"`` answer and an ``"error"`` message, and then no number at all
(a failure never becomes a score), ``"cached"`` (true when the call cache
answered it, so it cost nothing) and ``"run"`` (the run it came from where it
was judged, a number or a name). The other keys an export adds (kind, mode,
rubric version, display score) are accepted and ignored, so an export imports
again.

Each judge name becomes a Judge of kind ``imported`` (an imported judge of
that name is reused; a rubric or NLI judge's name is refused), and gets one
JudgeRun (scope ``imported``, done) per import, or, when its lines carry
``"run"``, one per run named: an export of a judge that ran twice holds two
judgements of each sample, one per run, and they stay two runs. Lines without
``"run"`` are one run per judge, as files written before it was read. All or nothing: every
problem found (up to a hundred) is reported at once, naming the file, the line
and the field, and nothing is written. Judgements imported before (the same
judge, sample and values: ``repeats``) refuse the import too, with the run
that holds them, so importing one file twice adds nothing.

The modules: ``lines`` reads and checks one line (``samples`` finds the sample
it names), ``runs`` groups the lines into runs and checks them across lines,
``repeats`` finds lines imported before, ``write`` is the import and its transaction, ``report`` its error and
report.
"""

from __future__ import annotations

from judging.services.ingest.repeats import JudgementsAlreadyImported
from judging.services.ingest.report import JudgementImportFailed
from judging.services.ingest.write import import_judgements

# What callers use (the API view as ``ingest.<name>``, the command, the demo, the tests): the import and its errors.
__all__ = ["JudgementImportFailed", "JudgementsAlreadyImported", "import_judgements"]
