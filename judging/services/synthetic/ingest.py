"""Importing a synthetic set from rewrites written elsewhere (JSONL), all or nothing."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.db import transaction

from annotate.models import Project, Sample
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
    """A set from rewrites written elsewhere: JSONL lines {"sample", "sentence", "type", "rewritten"}.

    All or nothing: every problem is named by file, line and field, and a file
    with any problem writes nothing.
    """
    _check_project(project)
    name = _check_name(project, name)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SyntheticSetError(f"the seed must be a whole number >= 0, not {seed!r}", field="seed")
    try:
        text = jsonl.decode("utf-8")
    except UnicodeDecodeError as error:
        raise SyntheticSetError(f"{filename}: not UTF-8 text ({error.reason} at byte {error.start})",
                                field="file") from error
    by_external: dict[str, list[Sample]] = defaultdict(list)
    for sample in Sample.objects.filter(project=project).select_related("passage"):
        by_external[sample.external_id].append(sample)
    problems: list[str] = []
    seen: dict[tuple[int, str, int], int] = {}
    accepted: list[tuple[Sample, str, int, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        problem = _read_import_line(line, number, filename, by_external, sentences_per_output, seen, accepted)
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
        synthetic_set.error = _incomplete_note(accepted, sentences_per_output)
        synthetic_set.save(update_fields=["status", "error"])
    return synthetic_set


def _incomplete_note(accepted: list[tuple[Sample, str, int, str, str]], n: int) -> str:
    """Which imported (output, type) pairs lack some sentences, so their items were not built."""
    covered: dict[tuple[str, str], set[int]] = defaultdict(set)
    for sample, kind, index, *_ in accepted:
        covered[(sample_key(sample), kind)].add(index)
    lacking = [f"{kind} of {key} lacks sentence(s) {', '.join(str(i) for i in range(n) if i not in indices)}"
               for (key, kind), indices in covered.items() if len(indices) < n]
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
) -> str | None:
    """Check one line; on success append it to `accepted` and return None, else return the problem."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        return _import_problem(filename, number, None, f"not a JSON object ({error.msg} at column {error.colno})")
    if not isinstance(record, dict):
        return _import_problem(filename, number, None, f"not a JSON object (got {type(record).__name__})")
    for field in ("sample", "sentence", "type", "rewritten"):
        if field not in record:
            return _import_problem(filename, number, field, "missing")
    external = record["sample"]
    if isinstance(external, bool) or not isinstance(external, str | int):
        return _import_problem(filename, number, "sample", "must be the sample's external id (text or number)")
    matches = by_external.get(str(external), [])
    if not matches:
        return _import_problem(filename, number, "sample", f"no sample with external id {str(external)!r} in "
                                                           "this project")
    if len(matches) > 1:
        return _import_problem(filename, number, "sample", f"external id {str(external)!r} names {len(matches)} "
                                                           "samples in this project")
    sample = matches[0]
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
        return _import_problem(filename, number, "sentence", f"sentence {index} of {str(external)!r} ({kind}) was "
                                                             f"already given on line {seen[key]}")
    seen[key] = number
    accepted.append((sample, kind, index, original, record["rewritten"].strip()))
    return None
