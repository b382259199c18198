"""Refusing samples an import repeats: ones the project holds already, or that the import gives twice.

A sample is one summary of one passage by one generator, so its identity is (source text, summary text,
generator), compared exactly. Neither a sample id nor a passage id is part of it: both are local to a batch or a
file (a samples JSONL file's ids default to line numbers, a FaithBench file has no passage id), so the same
samples come back under other ids when a file is saved under another name, re-exported or re-numbered, and
every figure (hallucination rates, agreement, challenging samples) would count them twice. Two generators that
wrote the same summary are two samples.

Refused: a sample the project holds already. What one import gives is taken as it gives it, repeats included:
a batch may hold a sample twice on purpose, to measure an annotator's consistency, and the files of one upload
may share samples on purpose too (a FaithBench export of a project whose selection batches repeat samples from
its other batches imports back into a new project as it is). The check only reads; an import that really wants
a second copy of the project's samples says so with ``allow_repeats``.

The check runs before the import's transaction (``refuse_repeated_samples``), so two imports of the same samples
at once could both pass it; inside the transaction, once the import holds its turn on the project
(annotate.services.ingest.prepare), ``refuse_repeats_added_since`` checks again against only the samples added
since the first check (one query, whatever the import's size).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db.models import Max

from annotate.models import Passage, Project, Sample
from annotate.services.ingest.checks import ImportProblems, _shown, _where
from annotate.services.ingest.parsed import ParsedBatch, ParsedSample

Identity = tuple[str, str, str]  # source text, summary text, generator
LOOKUP_CHUNK = 200  # source texts a lookup query names at once: texts are long, and SQLite limits parameters


def identity_of(sample: ParsedSample) -> Identity:
    return (sample.source, sample.summary, sample.generator)


def _file_of(batch: ParsedBatch) -> str:
    """The file a parsed batch was read from (a batch made in code names none: its name stands for it)."""
    return batch.file or batch.name


def where_in_file(batch: ParsedBatch, position: int, sample: ParsedSample) -> str:
    """A sample's place as the readers' own messages name it: ``file: line N`` (samples JSONL) or ``file: sample
    'id' (#index)`` (FaithBench, with the id as the file writes it)."""
    file = _file_of(batch)
    if sample.line is not None:
        return f"{file}: line {sample.line} (sample_id {_shown(sample.external_id)})"
    return _where(file, position, sample.imported_fields.get("sample_id", sample.external_id))


def _project_holders(project: Project, identities: set[Identity]) -> dict[Identity, str]:
    """The project's samples among ``identities``: each one's first batch and sample id. Passages are found by
    their text (a passage's key differs between a FaithBench file, keyed by a hash of its text, and a samples
    JSONL file, keyed by its passage_id), then only those passages' samples are read."""
    sources = sorted({source for source, _, _ in identities})
    passages: dict[int, str] = {}
    for at in range(0, len(sources), LOOKUP_CHUNK):
        passages.update(
            Passage.objects.filter(project=project, text__in=sources[at : at + LOOKUP_CHUNK]).values_list("id", "text")
        )
    holders: dict[Identity, str] = {}
    ids = sorted(passages)
    for at in range(0, len(ids), LOOKUP_CHUNK):
        rows = (
            Sample.objects.filter(passage_id__in=ids[at : at + LOOKUP_CHUNK])
            .order_by("batch__position", "position", "id")
            .values_list("passage_id", "summary", "generator", "batch__name", "external_id", "position")
        )
        for passage_id, summary, generator, batch_name, external_id, position in rows:
            _hold((passages[passage_id], summary, generator), identities, holders, batch_name, external_id, position)
    return holders


def _hold(
    key: Identity, identities: set[Identity], holders: dict[Identity, str], batch_name: str, external_id: str,
    position: int,
) -> None:
    """Record the first sample of the project found for an identity the import gives."""
    if key in identities and key not in holders:
        shown = _shown(external_id) if external_id else f"#{position}"
        holders[key] = f"batch {_shown(batch_name)} holds it already (its sample {shown})"


def highest_sample_id(project: Project) -> int:
    """The project's highest sample id, read before the checks: a sample above it was added after them. Per project:
    the samples of one project are written only by writers that take their turn on it (its row lock), so none of its
    samples committed later can have a lower id; another project's, written meanwhile, could."""
    return Sample.objects.filter(project=project).aggregate(highest=Max("pk"))["highest"] or 0


def _holders_added_since(project: Project, identities: set[Identity], seen: int) -> dict[Identity, str]:
    """``_project_holders`` among the samples added to the project after ``seen`` (``highest_sample_id``)."""
    rows = (
        Sample.objects.filter(project=project, pk__gt=seen)
        .order_by("batch__position", "position", "id")
        .values_list("passage__text", "summary", "generator", "batch__name", "external_id", "position")
    )
    holders: dict[Identity, str] = {}
    for source, summary, generator, batch_name, external_id, position in rows:
        _hold((source, summary, generator), identities, holders, batch_name, external_id, position)
    return holders


def refuse_repeated_samples(project: Project, batches: Sequence[ParsedBatch]) -> None:
    """ImportProblems naming every sample of ``batches`` that the project holds already (same source, summary and
    generator); ``repeats`` counts them. Nothing when none."""
    identities = {identity_of(sample) for batch in batches for sample in batch.samples}
    _refuse(batches, _project_holders(project, identities))


def refuse_repeats_added_since(project: Project, batches: Sequence[ParsedBatch], seen: int) -> None:
    """Inside the import's transaction, its turn on the project taken: ``refuse_repeated_samples`` against only the
    samples another import added since ``seen`` (``highest_sample_id`` before the first check), in one query."""
    identities = {identity_of(sample) for batch in batches for sample in batch.samples}
    _refuse(batches, _holders_added_since(project, identities, seen))


def _refuse(batches: Sequence[ParsedBatch], holders: dict[Identity, str]) -> None:
    problems: list[str] = []
    for batch in batches:
        for position, sample in enumerate(batch.samples):
            holder = holders.get(identity_of(sample))
            if holder is None:
                continue
            generator = f"generator {_shown(sample.generator)}" if sample.generator else "no generator"
            problems.append(
                f"{where_in_file(batch, position, sample)}: a repeat: {holder} (the same source, summary and "
                f"{generator}); a second copy would count twice in rates and agreement"
            )
    if problems:
        raise ImportProblems(problems, repeats=len(problems))
