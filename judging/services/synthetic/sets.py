"""Synthetic sets: creating a set with its outputs fixed, and building its nested percentage items from rewrites."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db import transaction

from annotate.models import Project, Sample
from annotate.text import split_sentences
from judging import synthetic as nesting
from judging.models import Judge, PromptVersion, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services.judges import current_prompt
from judging.services.runs import missing_key_variable


class SyntheticSetError(Exception):
    """A set that cannot be made as asked; the message names the field (and for imports the file and line)."""

    def __init__(self, message: str, *, field: str | None = None, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.problems = problems or [message]


def output_sentences(sample: Sample) -> list[list[int]]:
    """The output's sentence spans: stored by the embedding job, or split now with the same splitter."""
    return sample.sentences if sample.sentences is not None else split_sentences(sample.summary)


def sample_key(sample: Sample) -> str:
    """What seeds an output's replacement order: its external id (stable across imports), else its row id."""
    return sample.external_id or str(sample.pk)


def _check_name(project: Project, name: str) -> str:
    name = name.strip()
    if not name:
        raise SyntheticSetError("the set needs a name", field="name")
    if len(name) > 100:
        raise SyntheticSetError("the name is longer than 100 characters", field="name")
    if SyntheticSet.objects.filter(project=project, name=name).exists():
        raise SyntheticSetError(f"a synthetic set named {name!r} already exists in this project", field="name")
    return name


def _check_project(project: Project) -> None:
    if project.kind != Project.Kind.SPANS:
        raise SyntheticSetError(f"project {project.slug!r} is a {project.kind} project; synthetic sets need a span "
                                "project (outputs with sources)", field="project")


def _skip_note(skipped: list[tuple[Sample, str]], considered: int, sentences_per_output: int) -> str:
    if not skipped:
        return ""
    shown = "; ".join(f"{sample_key(sample)} {reason}" for sample, reason in skipped[:10])
    more = f"; and {len(skipped) - 10} more" if len(skipped) > 10 else ""
    return (f"Skipped {len(skipped)} of {considered} outputs that do not have exactly {sentences_per_output} "
            f"sentences: {shown}{more}.")


def create_synthetic_set(
    project: Project,
    *,
    name: str,
    writer: Judge | None,
    seed: int = 0,
    samples: Iterable[Sample] | None = None,
    by: Any = None,
    queue: bool = True,
    sentences_per_output: int = nesting.DEFAULT_SENTENCES_PER_OUTPUT,
) -> SyntheticSet:
    """A set over the project's outputs (or the given ones) with exactly n sentences; the writer rewrites later.

    Outputs with another number of sentences are skipped and named in the
    set's notes. Nothing is written when the set cannot be made.
    """
    _check_project(project)
    name = _check_name(project, name)
    if writer is None:
        raise SyntheticSetError("a set written here needs a writer judge (rewrites written elsewhere come in by "
                                "import)", field="writer")
    if writer.project_id != project.pk or writer.kind != Judge.Kind.RUBRIC:
        raise SyntheticSetError(f"the writer {writer.name!r} is not a rubric LLM judge of this project", field="writer")
    if missing := missing_key_variable(writer):
        raise SyntheticSetError(missing, field="api_key_env")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise SyntheticSetError(f"the seed must be a whole number >= 0, not {seed!r}", field="seed")
    if sentences_per_output < 1:
        raise SyntheticSetError("an output needs at least one sentence", field="sentences_per_output")
    chosen = list(samples) if samples is not None else list(
        Sample.objects.filter(project=project).select_related("passage"))
    if foreign := [sample for sample in chosen if sample.project_id != project.pk]:
        raise SyntheticSetError(f"sample {sample_key(foreign[0])} belongs to another project", field="samples")
    eligible: list[Sample] = []
    skipped: list[tuple[Sample, str]] = []
    for sample in chosen:
        reason = nesting.ineligibility(len(output_sentences(sample)), sentences_per_output)
        if reason is None:
            eligible.append(sample)
        else:
            skipped.append((sample, reason))
    if not eligible:
        raise SyntheticSetError(f"none of the {len(chosen)} outputs has exactly {sentences_per_output} sentences, "
                                "so no percentage set can be built", field="samples")
    with transaction.atomic():
        synthetic_set = SyntheticSet.objects.create(
            project=project, name=name, writer=writer, seed=seed, sentences_per_output=sentences_per_output,
            intrinsic_prompt=current_prompt(project, PromptVersion.Kind.INTRINSIC),
            extrinsic_prompt=current_prompt(project, PromptVersion.Kind.EXTRINSIC),
            total=len(eligible) * len(nesting.HALLUCINATION_TYPES) * sentences_per_output,
            error=_skip_note(skipped, len(chosen), sentences_per_output),
            created_by=by if getattr(by, "is_authenticated", False) else None,
        )
        # The gold items fix the set's outputs, so a resumed execution knows them without another list.
        SyntheticItem.objects.bulk_create([
            SyntheticItem(synthetic_set=synthetic_set, sample=sample, type=SyntheticItem.Type.GOLD, percent=0,
                          replaced=[], text=sample.summary)
            for sample in eligible
        ])
        if queue:
            _queue(synthetic_set)
    return synthetic_set


def _queue(synthetic_set: SyntheticSet) -> None:
    from judging import tasks

    set_id = synthetic_set.pk
    transaction.on_commit(lambda: tasks.execute_synthetic_set.delay(set_id))


def _gold_items(synthetic_set: SyntheticSet) -> list[SyntheticItem]:
    return list(synthetic_set.items.filter(type=SyntheticItem.Type.GOLD).select_related("sample__passage")
                .order_by("sample_id"))


def build_items(synthetic_set: SyntheticSet) -> int:
    """Create the items the stored rewrites allow and that do not exist yet; returns how many were created.

    An (output, type) gets its n items only when all n of its sentences were
    rewritten; otherwise none (the set summary counts them as not built).
    """
    n = synthetic_set.sentences_per_output
    written: dict[int, dict[str, dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
    for sample_id, hallucination_type, index, rewritten in synthetic_set.rewrites.filter(
        status=SyntheticRewrite.Status.OK
    ).values_list("sample_id", "type", "sentence_index", "rewritten"):
        written[sample_id][hallucination_type][index] = rewritten
    existing = set(synthetic_set.items.values_list("sample_id", "type", "percent"))
    new_items = []
    for gold in _gold_items(synthetic_set):
        sample = gold.sample
        spans = output_sentences(sample)
        if len(spans) != n or sample.summary != gold.text:
            continue  # the output was edited after the set was made: its rewrites no longer fit
        planned = nesting.plan_items(gold.text, spans, written.get(sample.pk, {}), seed=synthetic_set.seed,
                                     sample_key=sample_key(sample))
        for item in planned:
            if (sample.pk, item.type, item.percent) not in existing:
                new_items.append(SyntheticItem(synthetic_set=synthetic_set, sample=sample, type=item.type,
                                               percent=item.percent, replaced=list(item.replaced), text=item.text))
    SyntheticItem.objects.bulk_create(new_items, ignore_conflicts=True)
    return len(new_items)
