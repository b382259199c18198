"""Judgement lines grouped into imported runs, one per judge and run named, and the checks across lines.

A judge gives one kind of number (score or p) and one judgement per sample and
run; per-sentence figures match the output's sentences.
"""

from __future__ import annotations

from collections import defaultdict

from annotate.models import Project, Sample
from annotate.services.pairs.ingest.lines import Problems
from annotate.text import split_sentences
from judging.models import Judge
from judging.services.ingest.lines import ParsedJudgement

IN_CHUNK = 500  # ids per `IN (...)` query: well under SQLite's limit on query parameters


def check_judges(project: Project, parsed: list[ParsedJudgement], problems: Problems) -> dict[str, Judge | None]:
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


def check_sentence_counts(parsed: list[ParsedJudgement], problems: Problems) -> None:
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


def lines_by_run(parsed: list[ParsedJudgement]) -> dict[tuple[str, str | None], list[ParsedJudgement]]:
    """The lines of each imported run, runs in the order the lines first name them."""
    by_run: dict[tuple[str, str | None], list[ParsedJudgement]] = defaultdict(list)
    for entry in parsed:
        by_run[entry.run_key].append(entry)
    return by_run
