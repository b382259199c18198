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
and the field, and nothing is written.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotate.models import Project, Sample
from annotate.services.ingest.checks import ImportFailed, _shown, max_length
from annotate.services.pairs.ingest.lines import MAX_MESSAGES, Line, Problems, read_lines
from annotate.text import split_sentences
from judging.models import Judge, Judgement, JudgeRun
from judging.services.triage import flag_from_run

FIELDS = frozenset({
    "sample", "batch", "source", "output", "judge", "score", "p", "reasoning", "raw", "error", "status",
    "latency", "input_tokens", "output_tokens", "cost", "sentence_scores", "cached", "run",
})
# Keys of judging.services.export's JSONL that say how the judge was set up; an import makes its own judge.
EXPORT_ONLY = frozenset({"kind", "mode", "rubric_version", "display_score"})
MAX_RUN_LABEL = 100  # characters of a "run" given as a name
STATUSES = tuple(Judgement.Status.values)  # ok, parse_error, error
MAX_TOKENS = 2_147_483_647  # PositiveIntegerField
BATCH_SIZE = 1000
IN_CHUNK = 500  # ids per `IN (...)` query: well under SQLite's limit on query parameters


class JudgementImportFailed(ImportFailed):
    """Bad judge outputs: every message names the file, the line and the field; nothing was written."""

    def __init__(self, messages: list[str], total: int | None = None) -> None:
        self.messages = list(messages[:MAX_MESSAGES])
        self.total = max(total if total is not None else len(messages), len(self.messages))
        super().__init__(self.summary())

    def summary(self) -> str:
        if self.total == 1:
            return self.messages[0]
        text = f"{self.total} errors:\n" + "\n".join(self.messages)
        if self.total > len(self.messages):
            text += f"\n... and {self.total - len(self.messages)} more"
        return text


@dataclass
class ParsedJudgement:
    line: Line
    sample_id: int
    judge: str
    status: str
    score: int | None
    probability: float | None
    reasoning: str
    raw: str
    error: str
    latency: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    sentence_scores: list[float | None] | None
    cached: bool
    source_run: str | None  # the run named by the line (as text), None when the line names none

    @property
    def run_key(self) -> tuple[str, str | None]:
        """Lines with the same key become one imported run."""
        return (self.judge, self.source_run)


@dataclass
class ImportedRun:
    run: JudgeRun
    judge_created: bool
    flagged: int | None = None  # audit items the run flagged, when asked to flag


@dataclass
class JudgementImportReport:
    project: Project
    runs: list[ImportedRun] = field(default_factory=list)

    @property
    def judgements(self) -> int:
        return sum(imported.run.total for imported in self.runs)

    @property
    def flagged(self) -> int | None:
        counts = [imported.flagged for imported in self.runs if imported.flagged is not None]
        return sum(counts) if counts else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "project": self.project.slug,
            "judgements": self.judgements,
            "flagged": self.flagged,
            "runs": [
                {
                    "run": imported.run.pk,
                    "judge": imported.run.judge.name,
                    "judge_created": imported.judge_created,
                    "items": imported.run.total,
                    "scored": imported.run.scored,
                    "failed": imported.run.failed,
                    "flagged": imported.flagged,
                }
                for imported in self.runs
            ],
        }

    def describe(self) -> str:
        parts = []
        for imported in self.runs:
            run = imported.run
            new = ", new judge" if imported.judge_created else ""
            flagged = f", {imported.flagged} flagged" if imported.flagged is not None else ""
            parts.append(f"  {run.judge.name} (run {run.pk}{new}): {run.scored} scored, {run.failed} failed{flagged}")
        return f"imported {self.judgements} judgements into {self.project.slug!r}:\n" + "\n".join(parts)


# --------------------------------------------------------------------------- reading one line


class _SampleFinder:
    """Samples of the project by external id (and batch) or by their two texts, looked up once per import."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self._by_external_id: dict[str, list[tuple[int, str]]] | None = None
        self._by_texts: dict[tuple[str, str], list[tuple[int, str]]] | None = None

    def by_external_id(self, external_id: str, batch: str | None, where: str) -> int:
        if self._by_external_id is None:
            self._by_external_id = defaultdict(list)
            rows = Sample.objects.filter(project=self.project).values_list("external_id", "pk", "batch__name")
            for key, pk, batch_name in rows.iterator(chunk_size=5000):
                self._by_external_id[key].append((pk, batch_name))
        found = self._by_external_id.get(external_id, [])
        return self._one(found, batch, where, f"with external id {external_id!r}", "field 'batch'")

    def by_texts(self, source: str, output: str, batch: str | None, where: str) -> int:
        if self._by_texts is None:
            self._by_texts = defaultdict(list)
            rows = Sample.objects.filter(project=self.project).values_list("passage__text", "summary", "pk", "batch__name")
            for passage_text, summary, pk, batch_name in rows.iterator(chunk_size=2000):
                self._by_texts[(passage_text, summary)].append((pk, batch_name))
        found = self._by_texts.get((source, output), [])
        return self._one(found, batch, where, "whose passage text and summary equal fields 'source' and 'output'",
                         "field 'batch'")

    def _one(self, found: list[tuple[int, str]], batch: str | None, where: str, described: str, hint: str) -> int:
        slug = self.project.slug
        if batch is not None:
            in_batch = [pk for pk, name in found if name == batch]
            if not in_batch:
                if found:
                    raise ImportFailed(f"{where}: no sample {described} in batch {batch!r} of project {slug!r}")
                raise ImportFailed(f"{where}: no sample {described} in project {slug!r}")
            found = [(pk, batch) for pk in in_batch]
        if not found:
            raise ImportFailed(f"{where}: no sample {described} in project {slug!r}")
        if len(found) > 1:
            batches = sorted({name for _, name in found})
            shown = ", ".join(repr(name) for name in batches[:5]) + (", ..." if len(batches) > 5 else "")
            raise ImportFailed(
                f"{where}: {len(found)} samples {described} in project {slug!r} (batches {shown}); "
                f"name the batch with {hint}"
            )
        return found[0][0]


def _string(row: dict[str, Any], name: str, where: str, *, limit: int | None = None) -> str:
    value = row.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ImportFailed(f"{where}: field '{name}' must be a string, got {_shown(value)}")
    if limit is not None and len(value) > limit:
        raise ImportFailed(f"{where}: field '{name}' has {len(value)} characters; the limit is {limit}")
    return value


def _number(row: dict[str, Any], name: str, where: str, *, at_most: float = math.inf) -> float | None:
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ImportFailed(f"{where}: field '{name}' must be a number, got {_shown(value)}")
    if not 0 <= value <= at_most:
        limit = "" if at_most == math.inf else f" and at most {at_most:g}"
        raise ImportFailed(f"{where}: field '{name}' must be 0 or more{limit}, got {_shown(value)}")
    return float(value)


def _count(row: dict[str, Any], name: str, where: str) -> int | None:
    value = row.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise ImportFailed(f"{where}: field '{name}' must be a whole number from 0 to {MAX_TOKENS}, got {_shown(value)}")
    return value


def _score(row: dict[str, Any], where: str) -> int | None:
    """An integer 1..5 exactly as given: 4.0, "4" and true are refused, never coerced."""
    value = row.get("score")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
        raise ImportFailed(f"{where}: field 'score' must be an integer from 1 to 5, got {_shown(value)}")
    return value


def _sentence_scores(row: dict[str, Any], where: str, *, probability: bool) -> list[float | None] | None:
    """Per-sentence figures on the line's own scale (p 0..1, or score 1..5); null where a sentence has none."""
    value = row.get("sentence_scores")
    if value is None:
        return None
    low, high = (0.0, 1.0) if probability else (1.0, 5.0)
    scale = "p, from 0 to 1" if probability else "scores, from 1 to 5"
    if not isinstance(value, list) or not value:
        raise ImportFailed(f"{where}: field 'sentence_scores' must be a list with one figure (or null) per output "
                           f"sentence, got {_shown(value)}")
    for figure in value:
        if figure is None:
            continue
        if isinstance(figure, bool) or not isinstance(figure, int | float) or not low <= figure <= high:
            raise ImportFailed(f"{where}: field 'sentence_scores' holds {_shown(figure)}; its figures are {scale} "
                               "like the line's number (or null)")
    return [None if figure is None else float(figure) for figure in value]


def _flag(row: dict[str, Any], name: str, where: str) -> bool:
    value = row.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ImportFailed(f"{where}: field '{name}' must be true or false, got {_shown(value)}")
    return value


def _source_run(row: dict[str, Any], where: str) -> str | None:
    """The run the line came from where it was judged: a whole number (an export's run id) or a name."""
    value = row.get("run")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | str) or (isinstance(value, int) and value < 0):
        raise ImportFailed(f"{where}: field 'run' must be a run id (a whole number) or a run name, got {_shown(value)}")
    label = str(value)
    if not label.strip() or len(label) > MAX_RUN_LABEL:
        raise ImportFailed(f"{where}: field 'run' must be a run id or a name of 1 to {MAX_RUN_LABEL} characters, "
                           f"got {_shown(value)}")
    return label


def _sample_of(line: Line, finder: _SampleFinder) -> int:
    row, where = line.row, line.where
    batch = row.get("batch")
    if batch is not None and (not isinstance(batch, str | int) or isinstance(batch, bool) or str(batch) == ""):
        raise ImportFailed(f"{where}: field 'batch' must be a batch name, got {_shown(batch)}")
    batch_name = None if batch is None else str(batch)
    has_id = row.get("sample") is not None
    has_texts = row.get("source") is not None or row.get("output") is not None
    if has_id and has_texts:
        raise ImportFailed(f"{where}: give field 'sample' or fields 'source' and 'output', not both")
    if has_id:
        external_id = row["sample"]
        if isinstance(external_id, bool) or not isinstance(external_id, str | int) or str(external_id) == "":
            raise ImportFailed(f"{where}: field 'sample' must be a sample's external id, got {_shown(external_id)}")
        return finder.by_external_id(str(external_id), batch_name, where)
    if not has_texts:
        raise ImportFailed(f"{where}: missing field 'sample' (the sample's external id) or 'source' and 'output'")
    for name in ("source", "output"):
        if not isinstance(row.get(name), str):
            raise ImportFailed(f"{where}: field '{name}' must be a string (the {'passage' if name == 'source' else 'summary'} "
                               f"text, exactly), got {_shown(row.get(name))}")
    return finder.by_texts(row["source"], row["output"], batch_name, where)


def _parse_line(line: Line, finder: _SampleFinder) -> ParsedJudgement:
    row, where = line.row, line.where
    for name in row:
        if name not in FIELDS and name not in EXPORT_ONLY:
            raise ImportFailed(f"{where}: unknown field {name!r}; a judgement line has only {', '.join(sorted(FIELDS))}")
    judge = row.get("judge")
    if not isinstance(judge, str) or not judge.strip():
        missing = "missing field 'judge'" if judge is None else f"field 'judge' must be a name, got {_shown(judge)}"
        raise ImportFailed(f"{where}: {missing}")
    if judge != judge.strip():
        raise ImportFailed(f"{where}: field 'judge' {_shown(judge)} starts or ends with white space")
    if len(judge) > max_length(Judge, "name"):
        raise ImportFailed(f"{where}: field 'judge' has {len(judge)} characters; the limit is {max_length(Judge, 'name')}")
    status = row.get("status", "ok")
    if status not in STATUSES:
        raise ImportFailed(f"{where}: field 'status' must be one of {', '.join(STATUSES)}, got {_shown(status)}")
    score = _score(row, where)
    probability = _number(row, "p", where, at_most=1.0)
    if status == Judgement.Status.OK:
        if score is None and probability is None:
            raise ImportFailed(f"{where}: missing field 'score' (an integer 1..5) or 'p' (0..1); status is ok")
        if score is not None and probability is not None:
            raise ImportFailed(f"{where}: fields 'score' and 'p' are both given; a judgement has one of them")
    elif score is not None or probability is not None:
        given = "score" if score is not None else "p"
        raise ImportFailed(
            f"{where}: field '{given}' must be absent when status is {status}: a failed judgement has no number"
        )
    sentence_scores = _sentence_scores(row, where, probability=probability is not None)
    if sentence_scores is not None and status != Judgement.Status.OK:
        raise ImportFailed(f"{where}: field 'sentence_scores' must be absent when status is {status}")
    return ParsedJudgement(
        line=line,
        sample_id=_sample_of(line, finder),
        judge=judge,
        status=status,
        score=score,
        probability=probability,
        reasoning=_string(row, "reasoning", where),
        raw=_string(row, "raw", where),
        error=_string(row, "error", where),
        latency=_number(row, "latency", where),
        input_tokens=_count(row, "input_tokens", where),
        output_tokens=_count(row, "output_tokens", where),
        cost=_number(row, "cost", where),
        sentence_scores=sentence_scores,
        cached=_flag(row, "cached", where),
        source_run=_source_run(row, where),
    )


# --------------------------------------------------------------------------- the import


def _project(project_or_slug: Project | str) -> Project:
    if isinstance(project_or_slug, Project):
        project: Project | None = project_or_slug
    else:
        project = Project.objects.filter(slug=project_or_slug).first()
    if project is None:
        raise JudgementImportFailed([f"project: no project {str(project_or_slug)!r}"])
    if project.kind != Project.Kind.SPANS:
        raise JudgementImportFailed([f"project: {project.slug!r} is not a span project; judges score span projects' "
                                     "samples"])
    return project


def _check_judges(project: Project, parsed: list[ParsedJudgement], problems: Problems) -> dict[str, Judge | None]:
    """Each judge name's existing imported judge (None: to be created); other kinds' names are refused."""
    names = {entry.judge for entry in parsed}
    existing = {judge.name: judge for judge in Judge.objects.filter(project=project, name__in=names)}
    first_line: dict[str, ParsedJudgement] = {}
    number_kind: dict[str, tuple[str, ParsedJudgement]] = {}
    seen: dict[tuple[str, str | None, int], ParsedJudgement] = {}
    for entry in parsed:
        first_line.setdefault(entry.judge, entry)
        judge = existing.get(entry.judge)
        if judge is not None and judge.kind != Judge.Kind.IMPORTED and first_line[entry.judge] is entry:
            problems.add(
                f"{entry.line.where}: field 'judge': {entry.judge!r} is a {judge.kind} judge of "
                f"project {project.slug!r}; imported outputs need a name of their own (or an imported judge's)",
                entry.line.at,
            )
        kind = "score" if entry.score is not None else "p" if entry.probability is not None else ""
        if kind:
            earlier = number_kind.setdefault(entry.judge, (kind, entry))
            if earlier[0] != kind:
                problems.add(
                    f"{entry.line.where}: field '{kind}': judge {entry.judge!r} gives '{earlier[0]}' on "
                    f"{earlier[1].line.place}; one judge gives one kind of number (score 1..5 or p)",
                    entry.line.at,
                )
        # One judgement per sample and imported run: a judge that ran twice elsewhere has two, one per run.
        twice = seen.setdefault((*entry.run_key, entry.sample_id), entry)
        if twice is not entry:
            in_run = "" if entry.source_run is None else f" in run {entry.source_run!r}"
            problems.add(
                f"{entry.line.where}: judge {entry.judge!r} already has a judgement of this sample{in_run} on "
                f"{twice.line.place}",
                entry.line.at,
            )
    return {name: existing.get(name) for name in first_line}


def _check_sentence_counts(parsed: list[ParsedJudgement], problems: Problems) -> None:
    """Per-sentence figures must match the output's sentences one to one: a figure on the wrong sentence misleads."""
    wanted = [entry for entry in parsed if entry.sentence_scores is not None]
    ids = sorted({entry.sample_id for entry in wanted})
    counts: dict[int, int] = {}
    for first in range(0, len(ids), IN_CHUNK):
        rows = Sample.objects.filter(pk__in=ids[first : first + IN_CHUNK]).values_list("pk", "summary", "sentences")
        for pk, summary, sentences in rows:
            counts[pk] = len(sentences if sentences is not None else split_sentences(summary))
    for entry in wanted:
        assert entry.sentence_scores is not None
        if len(entry.sentence_scores) != counts[entry.sample_id]:
            problems.add(
                f"{entry.line.where}: field 'sentence_scores' has {len(entry.sentence_scores)} figures; the output has "
                f"{counts[entry.sample_id]} sentences (one figure or null per sentence)",
                entry.line.at,
            )


def import_judgements(
    project: Project | str,
    files: Sequence[tuple[str, bytes | str]],
    *,
    by: AbstractBaseUser | None = None,
    flag: bool = False,
) -> JudgementImportReport:
    """Read every file, check every line, then write judges, runs and judgements in one transaction.

    ``flag`` runs triage's ``flag_from_run`` on each imported run with the
    project's thresholds, in the same transaction.
    """
    project = _project(project)
    problems = Problems()
    finder = _SampleFinder(project)
    parsed: list[ParsedJudgement] = []
    for index, (name, content) in enumerate(files):
        for line in read_lines(name, content, problems, index):
            try:
                parsed.append(_parse_line(line, finder))
            except ImportFailed as error:
                problems.add(str(error), line.at)
    if not files:
        problems.add("no files to import")
    judges = _check_judges(project, parsed, problems)
    _check_sentence_counts(parsed, problems)
    if problems.found:
        ordered = [message for _, _, message in sorted(problems.found)]
        raise JudgementImportFailed(ordered, len(ordered))
    return _write(project, parsed, judges, by=by, flag=flag)


@transaction.atomic
def _write(
    project: Project,
    parsed: list[ParsedJudgement],
    judges: dict[str, Judge | None],
    *,
    by: AbstractBaseUser | None,
    flag: bool,
) -> JudgementImportReport:
    report = JudgementImportReport(project=project)
    now = timezone.now()
    # Runs are made in the order the lines first name them: an export lists runs oldest first, so a judge's
    # latest run there is its latest run here.
    by_run: dict[tuple[str, str | None], list[ParsedJudgement]] = defaultdict(list)
    for entry in parsed:
        by_run[entry.run_key].append(entry)
    made: dict[str, Judge] = {}
    for (name, _source_run), entries in by_run.items():
        judge = judges[name] or made.get(name)
        created = judge is None
        if judge is None:
            judge = Judge.objects.create(project=project, name=name, kind=Judge.Kind.IMPORTED, created_by=by)
            made[name] = judge
        scored = sum(1 for entry in entries if entry.status == Judgement.Status.OK)
        run = JudgeRun.objects.create(
            project=project,
            judge=judge,
            scope=JudgeRun.Scope.IMPORTED,
            status=JudgeRun.Status.DONE,
            total=len(entries),
            done=len(entries),
            scored=scored,
            failed=len(entries) - scored,
            created_by=by,
            started_at=now,
            finished_at=now,
        )
        Judgement.objects.bulk_create(
            (
                Judgement(
                    run=run,
                    sample_id=entry.sample_id,
                    status=entry.status,
                    score=entry.score,
                    probability=entry.probability,
                    reasoning=entry.reasoning,
                    raw=entry.raw,
                    error=entry.error,
                    latency_seconds=entry.latency,
                    input_tokens=entry.input_tokens,
                    output_tokens=entry.output_tokens,
                    cost=entry.cost,
                    sentence_scores=entry.sentence_scores,
                    cached=entry.cached,
                )
                for entry in entries
            ),
            batch_size=BATCH_SIZE,
        )
        report.runs.append(ImportedRun(run=run, judge_created=created))
    if flag:
        for imported in report.runs:
            imported.flagged = flag_from_run(imported.run)
    return report
