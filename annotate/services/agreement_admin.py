"""Admin writes behind the agreement and results pages.

- ``set_agreement_exclusion``: leave an annotator out of one batch's agreement
  (or bring them back). Exclusion is for agreement only; hallucination rates
  and detector evaluation still pool every submitter (annotate.services.stats).
- ``create_batches_from_selection``: turn a challenging-sample selection into
  new batches for a new annotation pass.

Why copies: a sample belongs to exactly one batch, and its spans, reviews,
gold label and agreement history hang off that row. Moving the selected
samples into new batches would rewrite the history of the batches they came
from (their agreement and rates would change after the fact). So the new
batches hold *new* Sample rows copied from the selected ones: same passage
(shared, so the source and its sentence embeddings are reused), summary,
generator, metadata (the detector outputs travel along) and external id; the
summary's sentence split and embeddings are copied too, since they only
depend on the summary text. Import bookkeeping (``imported_fields``) is not
copied: the copies were not imported. A passage whose samples already exist
in several batches (e.g. copied by an earlier selection) contributes each
(generator, summary) once. The copies start with no spans; assigning
annotators is the usual step on the project page.

One consequence to keep in mind: once the copies are annotated and
submitted, results of that round pool them with the originals, so a
generator's rate counts such a summary twice. Compare rounds, or keep the
selection in its own project, when that matters.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.db.models import Max

from annotate.models import Assignment, Batch, Passage, Project, Sample
from annotate.services.ingest.checks import batch_name_problem

MAX_PREFIX_LENGTH = 150


class AgreementAdminError(ValueError):
    """Bad input to an admin action; the message names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class SelectionAlreadyMade(AgreementAdminError):
    """The batches of this very selection exist already (a second press, a double submit): nothing new made."""

    def __init__(self, batches: list[Batch]) -> None:
        super().__init__(
            "name_prefix",
            f"batch {batches[0].name!r} already exists with this selection ({len(batches)} batches, "
            f"{batches[0].name} … {batches[-1].name}); nothing new was created",
        )
        self.batches = batches


def set_agreement_exclusion(assignment: Assignment, excluded: bool) -> Assignment:
    """Leave the assignment's annotator out of its batch's agreement (excluded=True), or bring them back."""
    if not isinstance(excluded, bool):
        raise AgreementAdminError("excluded", f"must be true or false, not {excluded!r}")
    Assignment.objects.filter(pk=assignment.pk).update(excluded_from_agreement=excluded)
    assignment.excluded_from_agreement = excluded
    return assignment


@transaction.atomic
def create_batches_from_selection(
    project: Project, passage_ids: Sequence[int], name_prefix: str, passages_per_batch: int = 5
) -> list[Batch]:
    """New batches ``<prefix>-1``, ``<prefix>-2``, ... holding copies of the selected passages' samples.

    Passages keep the given order (the selection's rank) and are cut into
    batches of ``passages_per_batch``; within a passage, samples keep their
    batch and position order. All or nothing: a bad argument or a batch name
    already taken changes nothing.
    """
    prefix = (name_prefix or "").strip()
    if not prefix:
        raise AgreementAdminError("name_prefix", "give the new batches a name prefix, e.g. 'challenging'")
    if len(prefix) > MAX_PREFIX_LENGTH:
        raise AgreementAdminError("name_prefix", f"at most {MAX_PREFIX_LENGTH} characters")
    if isinstance(passages_per_batch, bool) or not isinstance(passages_per_batch, int) or passages_per_batch < 1:
        raise AgreementAdminError("passages_per_batch", f"must be a positive whole number, not {passages_per_batch!r}")
    wanted = list(dict.fromkeys(passage_ids))
    if not wanted:
        raise AgreementAdminError("passage_ids", "the selection is empty: no passage group to copy")
    known = set(Passage.objects.filter(project=project, pk__in=wanted).values_list("pk", flat=True))
    missing = [pk for pk in wanted if pk not in known]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (" ..." if len(missing) > 10 else "")
        raise AgreementAdminError("passage_ids", f"not passages of project {project.slug!r}: {shown}")

    groups = [wanted[start : start + passages_per_batch] for start in range(0, len(wanted), passages_per_batch)]
    names = [f"{prefix}-{number}" for number in range(1, len(groups) + 1)]
    if (problem := batch_name_problem(names[-1])) is not None:
        raise AgreementAdminError("name_prefix", f"the batch name {names[-1]!r} {problem}")
    # One request at a time per project from here on: a double submit waits, then finds the batches made.
    Project.objects.select_for_update().filter(pk=project.pk).first()
    taken = sorted(Batch.objects.filter(project=project, name__in=names).values_list("name", flat=True))
    if taken:
        made = _batches_of_selection(project, prefix, groups)
        if made:
            raise SelectionAlreadyMade(made)
        raise AgreementAdminError("name_prefix", f"batch {taken[0]!r} already exists; choose another prefix")

    originals: dict[int, list[Sample]] = {pk: [] for pk in wanted}
    seen: set[tuple[int, str, str]] = set()
    rows = Sample.objects.filter(project=project, passage_id__in=wanted).order_by("batch__position", "batch_id",
                                                                                  "position", "id")
    for sample in rows:
        key = (sample.passage_id, sample.generator, sample.summary)
        if key not in seen:
            seen.add(key)
            originals[sample.passage_id].append(sample)
    empty = [pk for pk in wanted if not originals[pk]]
    if empty:
        raise AgreementAdminError("passage_ids", f"passages without samples: {', '.join(map(str, empty[:10]))}")

    first_position = (Batch.objects.filter(project=project).aggregate(top=Max("position"))["top"] or 0) + 1
    batches = Batch.objects.bulk_create(
        [Batch(project=project, name=name, position=first_position + offset) for offset, name in enumerate(names)]
    )
    copies = []
    for batch, group in zip(batches, groups, strict=True):
        samples = [sample for passage_id in group for sample in originals[passage_id]]
        copies.extend(
            Sample(
                project=project,
                passage_id=sample.passage_id,
                batch=batch,
                position=position,
                external_id=sample.external_id,
                summary=sample.summary,
                generator=sample.generator,
                metadata=sample.metadata,
                sentences=sample.sentences,
                embeddings=sample.embeddings,
                embedding_model=sample.embedding_model,
            )
            for position, sample in enumerate(samples)
        )
    Sample.objects.bulk_create(copies, batch_size=2000)
    return batches


def _batches_of_selection(project: Project, prefix: str, groups: list[list[int]]) -> list[Batch] | None:
    """The batches ``<prefix>-1`` .. ``-n`` when they hold exactly these passage groups (and no ``-(n+1)``)."""
    names = [f"{prefix}-{number}" for number in range(1, len(groups) + 2)]
    batches = {batch.name: batch for batch in Batch.objects.filter(project=project, name__in=names)}
    if names[-1] in batches or len(batches) != len(groups):
        return None
    made = [batches[name] for name in names[:-1]]
    for batch, group in zip(made, groups, strict=True):
        passages = set(Sample.objects.filter(batch=batch).values_list("passage_id", flat=True))
        if passages != set(group):
            return None
    return made
