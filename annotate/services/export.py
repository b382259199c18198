"""Exporting labeled datasets: FaithBench batch files, JSONL (a sample a line), CSV (a span a row).

Exports stream: samples are read in chunks with their spans, and written as
they are read, so memory stays flat however large the project. Spans that
came from a FaithBench file are written back with the values they were read
with (annot_id, annotator_id, raw note, quoted spans, extra keys), so a
FaithBench export of an imported file gives the file back. What the importer
would otherwise read differently is written too (a ``roster``, the generator
as ``metadata.summarizer``), so a re-import gives the same figures.
"""

from __future__ import annotations

import csv
import io
import json
import time
import zipfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from django.contrib.auth import get_user_model
from django.db.models import Q

from annotate.models import Assignment, Batch, GoldLabel, Project, Sample, SpanAnnotation
from annotate.services.ingest import ABSENT_KEYS, IMPORTED_AS
from annotate.services.pseudonyms import pseudonyms_for
from annotate.services.stats import batch_submitters, project_rounds, sample_worst_labels
from annotate.spreadsheet import text_row
from annotate.taxonomy import CATEGORY_NAMES, CONSISTENT, category_of, label_categories, worst_category

Format = Literal["faithbench", "jsonl", "csv"]
FORMATS: tuple[str, ...] = ("faithbench", "jsonl", "csv")
CHUNK = 2000
# What a download of each format is sent as, by the API and by the project page's download link alike.
CONTENT_TYPES: dict[str, str] = {
    "faithbench": "application/zip", "jsonl": "application/jsonl; charset=utf-8", "csv": "text/csv; charset=utf-8",
}
# Each format's name as the export form gives it; the exports table names past exports the same way.
FORMAT_NAMES: dict[str, str] = {
    "faithbench": "FaithBench batch files (.zip)", "jsonl": "JSONL, a sample a line", "csv": "CSV, a span a row",
}
# Round 1 is each annotator's own work; round 2 reconciles it (annotate.services.rounds.RECONCILIATION_ROUND).
ROUND_NAMES: dict[int, str] = {1: "round 1 (independent)", 2: "round 2 (reconciliation)"}
CSV_COLUMNS = [
    "batch", "sample_id", "generator", "annotator", "round", "summary_start", "summary_end", "summary_span",
    "labels", "category", "note", "source_start", "source_end", "source_span", "annot_id",
]


class ExportError(ValueError):
    """An export that cannot run as asked. With a ``field``, the message starts with the option at fault
    ("round: ..."), and ``detail`` is the rest, for an API that puts it under that field's name."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.detail = message


def export_rounds(project: Project) -> list[int]:
    """The rounds an export can be asked for: round 1, which every project starts in (its samples export
    before anyone is assigned), every round with assignments (stats.project_rounds, the results page's
    rounds), and every round holding spans (work left by an unassigned annotator stays exportable)."""
    with_spans = (
        SpanAnnotation.objects.filter(sample__project=project).order_by().values_list("round", flat=True).distinct()
    )
    return sorted({1, *project_rounds(project), *with_spans})


def _round_exists(project: Project, round: int) -> bool:
    """export_rounds' test for one round, with a query or two instead of listing them all."""
    return (
        round == 1
        or Assignment.objects.filter(batch__project=project, round=round).exists()
        or SpanAnnotation.objects.filter(sample__project=project, round=round).exists()
    )


@dataclass(frozen=True)
class ExportOptions:
    format: str = "faithbench"
    round: int = 1
    pseudonyms: bool = False

    def check(self, project: Project) -> ExportOptions:
        """Refuse what no export can give, before anything is written or a response has begun: every
        caller (API, command, page, background job) goes through here."""
        if self.format not in FORMATS:
            raise ExportError(f"{self.format!r} is not one of {', '.join(FORMATS)}", "format")
        if isinstance(self.round, bool) or not isinstance(self.round, int) or self.round < 1:
            raise ExportError(f"{self.round!r} is not a round number (1, 2, ...)", "round")
        if not _round_exists(project, self.round):
            # Otherwise the export would be every sample marked with a round that has no work at all.
            known = ", ".join(map(str, export_rounds(project)))
            raise ExportError(f"project {project.slug!r} has no round {self.round} (its rounds: {known})", "round")
        return self


def describe_options(options: dict[str, Any]) -> str:
    """A past export's settings in the export form's words: "JSONL, a sample a line · round 2 (reconciliation) ·
    pseudonyms". Read from a job's stored options, so a format or round unknown today is still shown as stored."""
    fmt, round = options.get("format", ""), options.get("round")
    parts = [FORMAT_NAMES.get(fmt, str(fmt)), ROUND_NAMES.get(round, f"round {round}") if round is not None else ""]
    if options.get("pseudonyms"):
        parts.append("pseudonyms instead of names")
    return " · ".join(part for part in parts if part)


class _Names:
    """Annotator names as shown in an export: usernames, or the project's pseudonyms ("Annotator A"),
    the same letters the round-2 page shows (annotate.services.pseudonyms)."""

    def __init__(self, project: Project, pseudonyms: bool) -> None:
        self.pseudonyms = pseudonyms
        with_spans = SpanAnnotation.objects.filter(sample__project=project).values_list("annotator_id", flat=True)
        assigned = Assignment.objects.filter(batch__project=project).values_list("annotator_id", flat=True)
        ids = set(with_spans) | set(assigned)
        self.names = (
            pseudonyms_for(project, ids)
            if pseudonyms
            else dict(get_user_model().objects.filter(pk__in=ids).values_list("pk", "username"))
        )

    def __call__(self, user_id: int) -> str:
        return self.names.get(user_id, str(user_id))


def _batch_samples(batch: Batch, round: int) -> Iterator[tuple[Sample, list[dict]]]:
    """A batch's samples in order with their spans of one round, CHUNK samples a query."""
    samples = Sample.objects.filter(batch=batch).select_related("passage", "batch", "gold").order_by("position", "id")
    after: tuple[int, int] | None = None
    while True:
        page = samples
        if after is not None:  # keyset pagination keeps each query cheap on large batches
            page = samples.filter(Q(position__gt=after[0]) | Q(position=after[0], id__gt=after[1]))
        chunk = list(page[:CHUNK])
        if not chunk:
            return
        spans: dict[int, list[dict]] = defaultdict(list)
        rows = SpanAnnotation.objects.filter(sample__in=[s.pk for s in chunk], round=round).order_by("id").values(
            "id", "sample_id", "annotator_id", "round", "start", "end", "text", "labels", "note",
            "source_start", "source_end", "source_text", "imported_fields",
        )
        for row in rows:
            spans[row["sample_id"]].append(row)
        for sample in chunk:
            yield sample, spans.get(sample.pk, [])
        after = (chunk[-1].position, chunk[-1].pk)


def _project_samples(project: Project, round: int, progress: Any = None) -> Iterator[tuple[Sample, list[dict]]]:
    done = 0
    for batch in project.batches.all():
        for item in _batch_samples(batch, round):
            yield item
            done += 1
            if progress and done % CHUNK == 0:
                progress(done)


def _sample_id(sample: Sample) -> Any:
    return sample.imported_fields.get("sample_id", sample.external_id or sample.pk)


def _file_name(kept: dict[str, Any], user_id: int, names: _Names) -> str:
    """The annotator's name as a FaithBench file writes it: the name the app shows, or for an imported span the
    file's own spelling of it, so an export of an imported file gives the file back."""
    name = names(user_id)
    original = kept.get("annotator_name")
    if not names.pseudonyms and isinstance(original, str) and name in (original.strip(), kept.get(IMPORTED_AS)):
        # People are matched by the stripped name, or by name and id ("New User (a3ac)"): the file gets its
        # own spelling back.
        return original
    return name


def _imported_annot_ids(batch: Batch, round: int) -> frozenset[str]:
    """The annot_ids the batch's imported spans of the round carry, which a span made here must not repeat."""
    found = SpanAnnotation.objects.filter(sample__batch=batch, round=round, imported_fields__has_key="annot_id")
    return frozenset(str(value) for value in found.values_list("imported_fields__annot_id", flat=True))


def _annot_id(span: dict, kept: dict[str, Any], taken: frozenset[str]) -> Any:
    """The imported annot_id, or the span's own id, prefixed where an imported span of the batch has that id:
    an annot_id names one annotation of its file, and the importer refuses a file that repeats one."""
    if "annot_id" in kept:
        return kept["annot_id"]
    return f"faithlab-{span['id']}" if str(span["id"]) in taken else span["id"]


def faithbench_annotation(
    span: dict, names: _Names, *, file_spelling: bool = True, taken: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """One span as a FaithBench annotation. ``file_spelling`` (FaithBench files) gives imported spans their
    file's annotator_name back; without it (JSONL) every name is the app's, as the line's other keys have it.
    ``taken``: the annot_ids of the batch's imported spans (_imported_annot_ids)."""
    kept = span["imported_fields"] or {}
    name = _file_name(kept, span["annotator_id"], names) if file_spelling else names(span["annotator_id"])
    record = {
        "annot_id": _annot_id(span, kept, taken),
        "annotator_id": name if names.pseudonyms else kept.get("annotator_id", str(span["annotator_id"])),
        "annotator_name": name,
        "label": span["labels"],
        "note": kept["note"] if "note" in kept else span["note"],
        "summary_span": kept.get("summary_span", span["text"]),
        "summary_start": span["start"],
        "summary_end": span["end"],
        "source_span": kept.get("source_span", span["source_text"]),
        "source_start": span["source_start"],
        "source_end": span["source_end"],
    }
    for key, value in kept.items():
        if key not in (ABSENT_KEYS, IMPORTED_AS):
            record.setdefault(key, value)
    for key in kept.get(ABSENT_KEYS, ()):
        # A key the imported file did not have stays out, unless the app has since given it a value
        # (a source link made in round 2). annotator_id is a batch-local id: made up when absent.
        if record.get(key) is None or (key == "annotator_id" and not names.pseudonyms):
            record.pop(key, None)
    return record


def _faithbench_metadata(sample: Sample) -> dict[str, Any]:
    """The sample's metadata with its generator where FaithBench readers (our importer among them) look for it,
    metadata.summarizer, when the metadata does not already name one: samples from the plain JSONL keep their
    generator apart from their metadata, and would come back without one."""
    metadata = sample.metadata or {}
    if not sample.generator or metadata.get("summarizer") or metadata.get("generator") == sample.generator:
        return metadata
    return {**metadata, "summarizer": sample.generator}


def faithbench_sample(
    sample: Sample, spans: list[dict], names: _Names, taken: frozenset[str] = frozenset()
) -> dict[str, Any]:
    kept = sample.imported_fields or {}
    record: dict[str, Any] = {"sample_id": _sample_id(sample), "source": sample.passage.text, "summary": sample.summary}
    if spans or kept.get("has_annotations", True):
        record["annotations"] = [faithbench_annotation(span, names, taken=taken) for span in spans]
    metadata = _faithbench_metadata(sample)
    if metadata or kept.get("has_metadata", True):
        record["metadata"] = metadata
    for key, value in kept.items():
        if key not in ("has_metadata", "has_annotations"):
            record.setdefault(key, value)
    return record


class _BatchRoster:
    """Who annotated one batch, as the importer will read it back (ingest.import_batches).

    The importer counts the names under the file's ``roster`` key, or without one everyone with a span that
    counts. The app counts who submitted the round: a submitter who left no span (Consistent on every sample)
    and an annotator whose round was re-opened (spans, not submitted) differ. ``roster()`` is None where the
    importer's default gives the same people, so such a file stays as FaithBench writes it.
    """

    def __init__(self, project: Project, submitters: list[int], names: _Names) -> None:
        self.project = project
        self.submitters = submitters
        self.names = names
        self.categories = label_categories(project.taxonomy)
        self.counted: set[int] = set()  # authors of a span with a category: the importer's default
        self.spelling: dict[int, str] = {}  # user id -> the name their annotations carry in this file

    def add(self, spans: list[dict]) -> None:
        for span in spans:
            user_id = span["annotator_id"]
            if category_of(span["labels"], self.categories) is not None:
                self.counted.add(user_id)
            # The importer matches roster names to the annotations' names stripped.
            self.spelling.setdefault(user_id, _file_name(span["imported_fields"] or {}, user_id, self.names).strip())

    def roster(self) -> list[str] | None:
        if self.counted == set(self.submitters):
            return None
        return sorted({self.spelling.get(user_id) or self._name_elsewhere(user_id) for user_id in self.submitters})

    def _name_elsewhere(self, user_id: int) -> str:
        """A submitter without a span in this batch: named as their spans elsewhere in the project name them,
        so the importer takes them for the same person."""
        imported = (
            SpanAnnotation.objects.filter(sample__project=self.project, annotator_id=user_id)
            .exclude(imported_fields={}).order_by("id").values_list("imported_fields", flat=True).first()
        )
        return _file_name(imported or {}, user_id, self.names).strip()


class _Progress:
    """Samples written so far across a whole export, reported to ``progress`` every CHUNK samples."""

    def __init__(self, progress: Any = None) -> None:
        self.progress = progress
        self.done = 0

    def add(self) -> None:
        self.done += 1
        if self.progress and self.done % CHUNK == 0:
            self.progress(self.done)


def _faithbench_batch_bytes(
    project: Project, batch: Batch, round: int, names: _Names, submitters: list[int], counter: _Progress
) -> Iterator[bytes]:
    """One batch's FaithBench file, a sample at a time: the only place its JSON is built, so the files the export
    command writes and the entries of the streamed zip are the same bytes."""
    roster = _BatchRoster(project, submitters, names)
    taken = _imported_annot_ids(batch, round)
    yield b'{"samples": ['
    first = True
    for sample, spans in _batch_samples(batch, round):
        record = json.dumps(faithbench_sample(sample, spans, names, taken), ensure_ascii=False)
        yield ("\n" if first else ",\n").encode() + record.encode("utf-8")
        roster.add(spans)
        first = False
        counter.add()
    tail = "\n]"
    if (people := roster.roster()) is not None:  # after the samples: known once they are written
        tail += f',\n"roster": {json.dumps(people, ensure_ascii=False)}'
    yield (tail + "}\n").encode("utf-8")


def faithbench_files(
    project: Project, options: ExportOptions, progress: Any = None
) -> Iterator[tuple[str, Iterator[bytes]]]:
    """Each batch's FaithBench file as ``(<batch>.json, its bytes in pieces)``, built only as it is read: read each
    file's bytes to the end before asking for the next file. The options are checked now, before anything is built."""
    options.check(project)
    return _faithbench_files(project, options, progress)


def _faithbench_files(
    project: Project, options: ExportOptions, progress: Any = None
) -> Iterator[tuple[str, Iterator[bytes]]]:
    names = _Names(project, options.pseudonyms)
    submitters = batch_submitters(project, options.round)
    counter = _Progress(progress)
    for batch in project.batches.all():
        pieces = _faithbench_batch_bytes(project, batch, options.round, names, submitters.get(batch.pk, []), counter)
        yield f"{batch.name}.json", pieces


def write_faithbench(project: Project, out_dir: Path, options: ExportOptions, progress: Any = None) -> list[Path]:
    """One ``<batch>.json`` per batch in out_dir, written sample by sample."""
    files = faithbench_files(project, options, progress)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, pieces in files:
        path = out_dir / name
        with path.open("wb") as handle:
            for piece in pieces:
                handle.write(piece)
        written.append(path)
    return written


# A streamed zip is handed on once this many compressed bytes are waiting, and at the end of each batch file.
ZIP_CHUNK = 1 << 16


class _ZipSink:
    """A write-only, unseekable file for zipfile: it keeps what was written until drained. Without ``tell`` or
    ``seek``, zipfile writes each entry's sizes after its data (data descriptors), so nothing is rewritten."""

    def __init__(self) -> None:
        self.pending = bytearray()

    def write(self, data: bytes) -> int:
        self.pending += data
        return len(data)

    def flush(self) -> None:
        """Nothing to flush: the bytes wait for drain()."""

    def drain(self) -> bytes:
        data = bytes(self.pending)
        self.pending.clear()
        return data


def _zip_entry(name: str, mode: int) -> zipfile.ZipInfo:
    """An entry dated now, with the permissions an unzipped file or folder gets (as shutil.make_archive gives)."""
    entry = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    entry.external_attr = mode << 16
    if name.endswith("/"):  # empty, as ZipFile.mkdir leaves a folder it names itself
        entry.external_attr |= 0x10  # MS-DOS directory flag
        entry.CRC = entry.compress_size = entry.file_size = 0
    else:
        entry.compress_type = zipfile.ZIP_DEFLATED
    return entry


def faithbench_zip_chunks(project: Project, options: ExportOptions, progress: Any = None) -> Iterator[bytes]:
    """The FaithBench batch files zipped under ``<slug>-round<N>/``, given out as the zip is written: one batch
    file is built at a time, so a large project's download starts at once and memory stays at one sample plus a
    chunk. The options are checked now, so a bad round is refused before a streamed response has begun."""
    files = faithbench_files(project, options, progress)
    return _faithbench_zip_chunks(f"{project.slug}-round{options.round}", files)


def _faithbench_zip_chunks(stem: str, files: Iterator[tuple[str, Iterator[bytes]]]) -> Iterator[bytes]:
    """The zip of faithbench_files' files; what zipfile has written is handed on a chunk at a time."""
    sink = _ZipSink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.mkdir(_zip_entry(f"{stem}/", 0o40755))
        for name, pieces in files:
            with archive.open(_zip_entry(f"{stem}/{name}", 0o100644), "w") as entry:
                for piece in pieces:
                    entry.write(piece)
                    if len(sink.pending) >= ZIP_CHUNK:
                        yield sink.drain()
            yield sink.drain()
    yield sink.drain()  # the central directory, written on close


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


def export_to_path(project: Project, out: Path, options: ExportOptions, progress: Any = None) -> list[Path]:
    """Write an export: a directory of batch files for faithbench, one file otherwise."""
    options.check(project)
    if options.format == "faithbench":
        if out.exists() and not out.is_dir():
            raise ExportError(f"out: {out} is a file; the faithbench format writes a directory of batch files")
        return write_faithbench(project, out, options, progress)
    if out.is_dir():
        raise ExportError(f"out: {out} is a directory; {options.format} writes one file")
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = (jsonl_lines if options.format == "jsonl" else csv_lines)(project, options, progress)
    with out.open("w", encoding="utf-8", newline="") as handle:
        for text in lines:
            handle.write(text)
    return [out]


def download_name(project: Project, options: ExportOptions) -> str:
    """The file name a download gets: ``<slug>-round<N>.jsonl``/``.csv``, or ``.zip`` of the FaithBench files."""
    suffix = "zip" if options.format == "faithbench" else options.format
    return f"{project.slug}-round{options.round}.{suffix}"


def exports_dir() -> Path:
    from django.conf import settings

    return Path(settings.DATA_DIR) / "exports"


def start_export(project: Project, options: ExportOptions, created_by: Any) -> Any:
    """Record who asked for which export, and run it in the background."""
    from django.db import transaction

    from annotate.models import Job
    from annotate.tasks import run_export

    options.check(project)
    job = Job.objects.create(
        project=project, kind=Job.Kind.EXPORT, created_by=created_by,
        total=Sample.objects.filter(project=project).count(),
        options={"format": options.format, "round": options.round, "pseudonyms": options.pseudonyms},
    )
    transaction.on_commit(lambda: run_export.delay(job.pk))
    return job


def run_export_job(job_id: int) -> Any:
    """Write the export file of a job; running it again rewrites the same file, never a second one."""
    import shutil

    from django.utils import timezone

    from annotate.models import Job

    job = Job.objects.select_related("project").get(pk=job_id)
    if job.status == Job.Status.DONE:
        return job
    Job.objects.filter(pk=job.pk).update(status=Job.Status.RUNNING)
    options = ExportOptions(**job.options)
    folder = exports_dir() / str(job.pk)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    stem = f"{job.project.slug}-round{options.round}"

    def progress(done: int) -> None:
        Job.objects.filter(pk=job.pk).update(done=done)

    try:
        if options.format == "faithbench":  # the zip the API streams, written to a file a chunk at a time
            result = folder / f"{stem}.zip"
            with result.open("wb") as handle:
                for chunk in faithbench_zip_chunks(job.project, options, progress):
                    handle.write(chunk)
        else:
            result = folder / f"{stem}.{options.format}"
            export_to_path(job.project, result, options, progress)
    except Exception as error:
        Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, error=str(error), finished_at=timezone.now())
        raise
    Job.objects.filter(pk=job.pk).update(
        status=Job.Status.DONE, done=job.total, result_path=str(result), finished_at=timezone.now()
    )
    job.refresh_from_db()
    return job
