"""The line formats: JSONL (a sample a line, with worst-pooled labels) and CSV (a span a row)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

from annotate.models import GoldLabel, Project, Sample
from annotate.services.export.faithbench import faithbench_annotation
from annotate.services.export.options import UTF8_BOM, ExportOptions
from annotate.services.export.reading import _Names, _project_samples, _sample_id
from annotate.services.freeze import stale_gold_samples
from annotate.services.stats import batch_submitters, project_rounds, sample_worst_labels
from annotate.spreadsheet import text_row
from annotate.taxonomy import CATEGORY_NAMES, CONSISTENT, category_of, label_categories, worst_category

CSV_COLUMNS = [
    "batch", "sample_id", "generator", "annotator", "round", "summary_start", "summary_end", "summary_span",
    "labels", "category", "note", "source_start", "source_end", "source_span", "annot_id",
]


def _gold(sample: Sample) -> dict[str, Any] | None:
    try:
        gold = sample.gold
    except GoldLabel.DoesNotExist:
        return None
    return {"label": CATEGORY_NAMES[gold.category], "round": gold.round, "method": gold.method,
            "spans": [{k: v for k, v in span.items() if k != "from_span"} for span in gold.spans]}


def jsonl_lines(project: Project, options: ExportOptions, progress: Any = None) -> Iterator[str]:
    """A sample a line: texts, metadata, every annotation of the round, and worst-pooled labels.

    Both labels count the annotators who submitted the sample's batch in the round, as the results
    page does: ``worst_label_by_annotator`` holds each of them (Consistent where they left no span),
    and ``worst_label`` is the results page's own verdict (stats.sample_worst_labels), the worst of
    those, null while nobody has submitted the batch. Work in progress is in ``annotations`` only.
    ``adjudicated`` is the gold label, and ``gold_stale`` says whether it was built from spans that
    changed afterwards (freeze.stale_gold_samples, the curation page's "stale").

    The options are checked now, not at the first line, so a bad round is refused before a
    streamed response or a file has begun.
    """
    options.check(project)
    return _jsonl_lines(project, options, progress)


def _jsonl_lines(project: Project, options: ExportOptions, progress: Any = None) -> Iterator[str]:
    """The lines of jsonl_lines, whose caller has checked the options."""
    names = _Names(project, options.pseudonyms)
    categories = label_categories(project.taxonomy)
    submitters = batch_submitters(project, options.round)
    stale = stale_gold_samples(project)  # gold labels built from spans that changed afterwards
    verdicts = (
        {verdict.sample_id: verdict.category for verdict in sample_worst_labels(project, options.round)}
        if options.round in project_rounds(project) else {}  # no assignment in the round: nobody's verdict
    )
    for sample, spans in _project_samples(project, options.round, progress):
        counted = submitters.get(sample.batch_id, [])
        per_annotator: dict[str, str] = {names(user_id): CONSISTENT for user_id in counted}
        for span in spans:
            if span["annotator_id"] not in counted:
                continue
            name = names(span["annotator_id"])
            per_annotator[name] = worst_category((per_annotator.get(name), category_of(span["labels"], categories)))
        record = {
            "sample_id": _sample_id(sample),
            "batch": sample.batch.name,
            "passage_id": sample.passage.external_id,
            "generator": sample.generator,
            "round": options.round,
            "source": sample.passage.text,
            "summary": sample.summary,
            "metadata": sample.metadata,
            "annotations": [faithbench_annotation(span, names, file_spelling=False) for span in spans],
            "worst_label_by_annotator": {name: CATEGORY_NAMES[c] for name, c in sorted(per_annotator.items())},
            "worst_label": CATEGORY_NAMES[verdicts[sample.pk]] if sample.pk in verdicts else None,
            "adjudicated": _gold(sample),
            # True when the gold label above was built from spans that changed afterwards (the curation page
            # marks it stale); false when it is current or there is none.
            "gold_stale": sample.pk in stale,
        }
        yield json.dumps(record, ensure_ascii=False) + "\n"


def csv_lines(project: Project, options: ExportOptions, progress: Any = None) -> Iterator[str]:
    """A span a row, with a header row; the options are checked now, as jsonl_lines does."""
    options.check(project)
    return _csv_lines(project, options, progress)


def _csv_lines(project: Project, options: ExportOptions, progress: Any = None) -> Iterator[str]:
    names = _Names(project, options.pseudonyms)
    categories = label_categories(project.taxonomy)
    buffer = io.StringIO()
    if options.bom:  # before the header, the file's first bytes: where Excel looks for it
        buffer.write(UTF8_BOM)
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for sample, spans in _project_samples(project, options.round, progress):
        for span in spans:
            category = category_of(span["labels"], categories)
            writer.writerow(text_row([
                sample.batch.name, _sample_id(sample), sample.generator, names(span["annotator_id"]), span["round"],
                span["start"], span["end"], span["text"], "|".join(span["labels"]),
                CATEGORY_NAMES[category] if category else "", span["note"], span["source_start"],
                span["source_end"], span["source_text"], (span["imported_fields"] or {}).get("annot_id", span["id"]),
            ]))
        if buffer.tell() > 1 << 16:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
