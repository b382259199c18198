"""Importing a synthetic set from rewrites written elsewhere (JSONL), all or nothing."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from typing import Any

from django.db import transaction

from annotate import imported_json
from annotate.models import Project, Sample
from annotate.services.ingest.unknown import DefinedFields, UnknownFields, describe_unknown_fields
from judging import synthetic as nesting
from judging.models import SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.synthetic.sets import (
    SyntheticSetError,
    _check_name,
    _check_project,
    build_items,
    output_sentences,
    sample_key,
)

IMPORT_PROBLEMS_SHOWN = 20
# A line's other keys are imported with a note on the set that names them (annotate.services.ingest.unknown).
REWRITE_FIELDS = DefinedFields("by the synthetic rewrites format", "line", ("sample", "sentence", "type", "rewritten",
                                                                          "batch"))
BATCHES_SHOWN = 5  # batch names an ambiguity message lists before "..."


class _LineProblem(Exception):
    """One field's problem on one line; the caller adds the file and the line."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _import_problem(filename: str, line: int, field: str | None, message: str) -> str:
    where = f"{filename}, line {line}" + (f", field {field!r}" if field else "")
    return f"{where}: {message}"


def import_rewrites(
    project: Project,
    name: str,
    jsonl: bytes,
    filename: str,
    *,
    seed: int = 0,
    by: Any = None,
    sentences_per_output: int = nesting.DEFAULT_SENTENCES_PER_OUTPUT,
) -> SyntheticSet:
    """A set from rewrites written elsewhere: JSONL lines {"sample", "sentence", "type", "rewritten"}, and
    "batch" (the batch's name) where the external id repeats across batches, as it does after the results page
    copies samples into new batches.

    All or nothing: every problem is named by file, line and field, and a file
    with any problem writes nothing. A field the format does not define is not imported, and the set's notes
    name it (how many lines had it, the first).
    """
    _check_project(project)
    name = _check_name(project, name)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SyntheticSetError(f"the seed must be a whole number >= 0, not {seed!r}", field="seed")
    try:
        text = imported_json.decoded(jsonl, "UTF-8 JSONL")
    except imported_json.Unreadable as error:
        raise SyntheticSetError(f"{filename}: {error}", field="file") from None
    by_external: dict[str, list[Sample]] = defaultdict(list)
    # Batch order, so an ambiguity message lists the original batch before the copies made from it.
    rows = Sample.objects.filter(project=project).select_related("passage", "batch").order_by(
        "batch__position", "batch_id", "position", "id")
    for sample in rows:
        by_external[sample.external_id].append(sample)
    problems: list[str] = []
    seen: dict[tuple[int, str, int], int] = {}
    accepted: list[tuple[Sample, str, int, str, str]] = []
    unknown = UnknownFields()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        problem = _read_import_line(line, number, filename, by_external, sentences_per_output, seen, accepted,
                                    unknown)
        if problem:
            problems.append(problem)
    if not accepted and not problems:
        problems.append(f"{filename}: no rewrites in the file")
    if problems:
        shown = problems[:IMPORT_PROBLEMS_SHOWN]
        more = f"\n... and {len(problems) - len(shown)} more problems" if len(problems) > len(shown) else ""
        raise SyntheticSetError("\n".join(shown) + more, field="file", problems=problems)
    samples = list({sample.pk: sample for sample, *_ in accepted}.values())
    with transaction.atomic():
        synthetic_set = SyntheticSet.objects.create(
            project=project, name=name, writer=None, seed=seed, sentences_per_output=sentences_per_output,
            status=SyntheticSet.Status.RUNNING, total=len(accepted), done=len(accepted),
            created_by=by if getattr(by, "is_authenticated", False) else None,
        )
        SyntheticItem.objects.bulk_create([
            SyntheticItem(synthetic_set=synthetic_set, sample=sample, type=SyntheticItem.Type.GOLD, percent=0,
                          replaced=[], text=sample.summary)
            for sample in samples
        ])
        SyntheticRewrite.objects.bulk_create([
            SyntheticRewrite(synthetic_set=synthetic_set, sample=sample, sentence_index=index, type=kind,
                             original=original, rewritten=rewritten, status=SyntheticRewrite.Status.OK,
                             raw=json.dumps({"rewritten": rewritten}, ensure_ascii=False))
            for sample, kind, index, original, rewritten in accepted
        ])
        build_items(synthetic_set)
        synthetic_set.status = SyntheticSet.Status.DONE
        notes = [_incomplete_note(accepted, sentences_per_output), *describe_unknown_fields(unknown.fields())]
        synthetic_set.error = "\n".join(note for note in notes if note)
        synthetic_set.save(update_fields=["status", "error"])
    return synthetic_set


def _incomplete_note(accepted: list[tuple[Sample, str, int, str, str]], n: int) -> str:
    """Which imported (output, type) pairs lack some sentences, so their items were not built.

    Keyed by the sample row, not its external id: a copy in another batch shares the id but is its own output.
    """
    covered: dict[tuple[int, str], set[int]] = defaultdict(set)
    samples: dict[int, Sample] = {}
    for sample, kind, index, *_ in accepted:
        covered[(sample.pk, kind)].add(index)
        samples[sample.pk] = sample
    repeated = Counter(sample_key(sample) for sample in samples.values())

    def label(pk: int) -> str:
        key = sample_key(samples[pk])
        return key if repeated[key] == 1 else f"{key} (batch {samples[pk].batch.name})"

    lacking = [f"{kind} of {label(pk)} lacks sentence(s) {', '.join(str(i) for i in range(n) if i not in indices)}"
               for (pk, kind), indices in covered.items() if len(indices) < n]
    if not lacking:
        return ""
    return f"Not built, because the file does not rewrite every sentence: {'; '.join(lacking[:10])}."


def _read_import_line(
    line: str,
    number: int,
    filename: str,
    by_external: dict[str, list[Sample]],
    n: int,
    seen: dict[tuple[int, str, int], int],
    accepted: list[tuple[Sample, str, int, str, str]],
    unknown: UnknownFields,
) -> str | None:
    """Check one line; on success append it to `accepted` (its fields the format does not define to `unknown`) and
    return None, else return the problem."""
    try:
        record = imported_json.loads(line, with_line=False)
    except imported_json.Unreadable as error:
        return _import_problem(filename, number, None, f"not a JSON object ({error})")
    if not isinstance(record, dict):
        return _import_problem(filename, number, None, f"not a JSON object (got {type(record).__name__})")
    # NUL or a lone surrogate, NaN, a key given twice, too deep a nesting: refused on every database.
    if (refused := imported_json.find_refused(record)) is not None:
        return _import_problem(filename, number, refused.path or None, refused.problem)
    for field in ("sample", "sentence", "type", "rewritten"):
        if field not in record:
            return _import_problem(filename, number, field, "missing")
    try:
        sample = _sample_named(record, by_external)
    except _LineProblem as problem:
        return _import_problem(filename, number, problem.field, problem.message)
    external = record["sample"]
    spans = output_sentences(sample)
    if (reason := nesting.ineligibility(len(spans), n)) is not None:
        return _import_problem(filename, number, "sample", f"output {str(external)!r} {reason}")
    kind = record["type"]
    if kind not in nesting.HALLUCINATION_TYPES:
        return _import_problem(filename, number, "type", f"{kind!r} is not 'intrinsic' or 'extrinsic'")
    index = record["sentence"]
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
        return _import_problem(filename, number, "sentence", f"{index!r} is not a sentence index 0..{n - 1}")
    start, end = spans[index]
    original = sample.summary[start:end]
    if (problem := nesting.rewrite_problem(original, record["rewritten"])) is not None:
        return _import_problem(filename, number, "rewritten", problem)
    key = (sample.pk, kind, index)
    if key in seen:
        in_batch = "" if record.get("batch") is None else f" in batch {sample.batch.name!r}"
        return _import_problem(filename, number, "sentence", f"sentence {index} of {str(external)!r}{in_batch} "
                                                             f"({kind}) was already given on line {seen[key]}")
    seen[key] = number
    accepted.append((sample, kind, index, original, record["rewritten"].strip()))
    unknown.note(REWRITE_FIELDS, REWRITE_FIELDS.unknown(record), f"{filename}, line {number}")
    return None


def _batch_list(names: list[str]) -> str:
    shown = ", ".join(repr(name) for name in names[:BATCHES_SHOWN])
    return shown + (", ..." if len(names) > BATCHES_SHOWN else "")


def _in_batches(names: list[str]) -> str:
    return f"{'batch' if len(names) == 1 else 'batches'} {_batch_list(names)}"


def _sample_named(record: dict[str, Any], by_external: dict[str, list[Sample]]) -> Sample:
    """The one sample the line's "sample" (and optional "batch") names; else a problem that says how to fix it."""
    external = record["sample"]
    if isinstance(external, bool) or not isinstance(external, str | int):
        raise _LineProblem("sample", "must be the sample's external id (text or number)")
    external = str(external)
    matches = by_external.get(external, [])
    if not matches:
        raise _LineProblem("sample", f"no sample with external id {external!r} in this project")
    batches = list(dict.fromkeys(sample.batch.name for sample in matches))  # batch order, each once
    batch = record.get("batch")
    if batch is not None:
        if isinstance(batch, bool) or not isinstance(batch, str | int) or str(batch) == "":
            raise _LineProblem("batch", f"must be a batch's name (text or number), got {batch!r}")
        batch = str(batch)
        matches = [sample for sample in matches if sample.batch.name == batch]
        if not matches:
            raise _LineProblem("batch", f"no sample with external id {external!r} in batch {batch!r}; it is in "
                                        f"{_in_batches(batches)}")
    if len(matches) == 1:
        return matches[0]
    if batch is None and len(batches) > 1:
        raise _LineProblem("sample", f"external id {external!r} names {len(matches)} samples in this project; "
                                     f"add \"batch\": one of {_batch_list(batches)}")
    # Several samples with this id in one batch: no field of the line can tell them apart.
    where = batch if batch is not None else batches[0]
    raise _LineProblem("sample", f"external id {external!r} names {len(matches)} samples in batch {where!r}; the "
                                 "import cannot tell them apart (give them distinct external ids)")
