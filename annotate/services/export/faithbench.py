"""FaithBench batch files: a ``<batch>.json`` per batch, written back as an imported file was read.

Spans that came from a FaithBench file keep the values they were read with (annot_id, annotator_id, raw note,
quoted spans, extra keys); what the importer would otherwise read differently is written too (a ``roster``, the
generator as ``metadata.summarizer``), so a re-import gives the same figures.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from annotate.file_names import export_file_names
from annotate.models import Batch, Project, Sample, SpanAnnotation
from annotate.services.export.options import ExportError, ExportOptions
from annotate.services.export.reading import _batch_samples, _Names, _Progress, _sample_id
from annotate.services.export.whole_files import temporary_beside
from annotate.services.ingest import ABSENT_KEYS, IMPORTED_AS
from annotate.services.stats import batch_submitters
from annotate.taxonomy import category_of, label_categories


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
    file's bytes to the end before asking for the next file. The options are checked now, before anything is built.
    The file names are safe and unique (annotate.file_names.export_file_names): a batch's own name where it is one."""
    options.check(project)
    return _faithbench_files(project, options, progress)


def _faithbench_files(
    project: Project, options: ExportOptions, progress: Any = None
) -> Iterator[tuple[str, Iterator[bytes]]]:
    names = _Names(project, options.pseudonyms)
    submitters = batch_submitters(project, options.round)
    counter = _Progress(progress)
    batches = list(project.batches.all())
    # A batch's name is its file's, made safe: a name stored before imports refused unsafe ones ("../x", "a/b",
    # "CON") would write outside the folder, or fail to.
    for batch, file_name in zip(batches, export_file_names([batch.name for batch in batches]), strict=True):
        pieces = _faithbench_batch_bytes(project, batch, options.round, names, submitters.get(batch.pk, []), counter)
        yield file_name, pieces


def write_faithbench(project: Project, out_dir: Path, options: ExportOptions, progress: Any = None) -> list[Path]:
    """One ``<batch>.json`` per batch in out_dir, written sample by sample; never a file outside out_dir.

    All or nothing: every batch file is written under a temporary name beside its place first, and they are renamed
    into place only once the last one is written. On any error (a full disk, Ctrl-C, a database error) the
    temporaries go, so the folder keeps the previous export's files as they were and never shows a partial set
    (the first batches new, the rest missing or old) that looks like a whole export."""
    files = faithbench_files(project, options, progress)
    out_dir.mkdir(parents=True, exist_ok=True)
    folder = out_dir.resolve()
    pending: list[tuple[Path, Path]] = []  # (temporary, its place)
    try:
        for name, pieces in files:
            path = out_dir / name
            if path.resolve().parent != folder:  # export_file_names makes this impossible; a second lock on the door
                raise ExportError(f"batch file {name!r} would be written outside {out_dir}; nothing was written")
            descriptor, temporary = temporary_beside(path)
            pending.append((temporary, path))
            with os.fdopen(descriptor, "wb") as handle:
                for piece in pieces:
                    handle.write(piece)
        for temporary, path in pending:
            os.replace(temporary, path)
    except (Exception, KeyboardInterrupt):  # a process killed outright leaves them, as whole_file does
        for temporary, _ in pending:
            temporary.unlink(missing_ok=True)
        raise
    return [path for _, path in pending]
