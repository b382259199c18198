"""Exports written to disk: the export command's files, and the project page's background export job."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from annotate.models import Project, Sample
from annotate.services.export.archive import faithbench_zip_chunks
from annotate.services.export.faithbench import write_faithbench
from annotate.services.export.lines import csv_lines, jsonl_lines
from annotate.services.export.options import ExportError, ExportOptions


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


def exports_dir() -> Path:
    from django.conf import settings

    return Path(settings.DATA_DIR) / "exports"


def start_export(project: Project, options: ExportOptions, created_by: Any) -> Any:
    """Record who asked for which export, and run it in the background."""
    from django.db import transaction

    from annotate.models import Job
    from annotate.tasks import run_export

    options.check(project)
    stored = {"format": options.format, "round": options.round, "pseudonyms": options.pseudonyms}
    if options.bom:  # only when asked for: an export without it is recorded as before
        stored["bom"] = True
    job = Job.objects.create(
        project=project, kind=Job.Kind.EXPORT, created_by=created_by,
        total=Sample.objects.filter(project=project).count(), options=stored,
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
