"""The import: every file read and checked first, then judges, runs and judgements written in one transaction."""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotate.models import Project
from annotate.services.ingest.checks import ImportFailed
from annotate.services.pairs.ingest.lines import Problems, read_lines
from judging.models import Judge, Judgement, JudgeRun
from judging.services.ingest.lines import ParsedJudgement, csv_refusal, parse_line
from judging.services.ingest.repeats import check_repeats
from judging.services.ingest.report import ImportedRun, JudgementImportFailed, JudgementImportReport
from judging.services.ingest.runs import check_judges, check_sentence_counts, lines_by_run
from judging.services.ingest.samples import SampleFinder
from judging.services.triage import flag_from_runs

BATCH_SIZE = 1000


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


def import_judgements(
    project: Project | str,
    files: Sequence[tuple[str, bytes | str]],
    *,
    by: AbstractBaseUser | None = None,
    flag: bool = False,
) -> JudgementImportReport:
    """Read every file, check every line, then write judges, runs and judgements in one transaction.

    ``flag`` runs triage's ``flag_from_runs`` on the imported runs with the
    project's thresholds, in the same transaction; the report counts each run's
    flags and, apart, the samples the runs sent to the audit queue (a sample two
    runs flag is one audit item). Judgements imported before refuse the import
    (``repeats.JudgementsAlreadyImported``, naming each repeated group of lines).
    """
    project = _project(project)
    problems = Problems()
    finder = SampleFinder(project)
    parsed: list[ParsedJudgement] = []
    for index, (name, content) in enumerate(files):
        if refusal := csv_refusal(name, content):
            problems.add(refusal, (index, 0))
            continue
        for line in read_lines(name, content, problems, index):
            try:
                parsed.append(parse_line(line, finder))
            except ImportFailed as error:
                problems.add(str(error), line.at)
    if not files:
        problems.add("no files to import")
    judges = check_judges(project, parsed, problems)
    check_sentence_counts(parsed, problems)
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
    by_run = lines_by_run(parsed)
    # Locked first, so two imports of one file at once cannot both find it new (PostgreSQL; SQLite writes one at
    # a time anyway). A repeat refuses everything: nothing is written yet.
    list(Judge.objects.select_for_update().filter(pk__in=[judge.pk for judge in judges.values() if judge]))
    check_repeats(by_run, judges)
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
        report.queued = flag_from_runs([imported.run for imported in report.runs])
        for imported in report.runs:
            imported.flagged = imported.run.flagged
    return report
