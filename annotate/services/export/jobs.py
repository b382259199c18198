"""Exports written to disk: the export command's files, and the project page's background export job."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.db.models import QuerySet
from django.utils import timezone

from annotate.models import Job, Project, Sample
from annotate.services import jobs
from annotate.services.export.archive import faithbench_zip_chunks
from annotate.services.export.faithbench import write_faithbench
from annotate.services.export.lines import csv_lines, jsonl_lines
from annotate.services.export.options import ExportError, ExportOptions, export_stem
from annotate.services.export.whole_files import whole_file


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
    with whole_file(out, "w", encoding="utf-8", newline="") as handle:
        for text in lines:
            handle.write(text)
    return [out]


def exports_dir() -> Path:
    from django.conf import settings

    return Path(settings.DATA_DIR) / "exports"


def start_export(project: Project, options: ExportOptions, created_by: Any) -> Job:
    """Record who asked for which export, and run it in the background.

    When the broker refuses the task, the job (this object too) is failed with the error instead of staying queued.
    """
    from annotate.tasks import run_export

    options.check(project)
    stored = {"format": options.format, "round": options.round, "pseudonyms": options.pseudonyms}
    if options.bom:  # only when asked for: an export without it is recorded as before
        stored["bom"] = True
    job = Job.objects.create(
        project=project, kind=Job.Kind.EXPORT, created_by=created_by,
        total=Sample.objects.filter(project=project).count(), options=stored,
    )
    jobs.queue_job(job, run_export)
    return job


def _job_folder(job_id: int) -> Path:
    return exports_dir() / str(job_id)


def restart_export(job: Job) -> None:
    """Drop what an interrupted run of the export wrote (its partial file) and its progress, so that it is written
    again from scratch; the caller holds the job's lock."""
    shutil.rmtree(_job_folder(job.pk), ignore_errors=True)
    Job.objects.filter(pk=job.pk).update(done=0, result_path="")


def run_export_job(job_id: int) -> Job:
    """Write the export file of a job; running it again rewrites the same file, never a second one.

    One process at a time per job (its lock): a second delivery while the first
    writes returns at once. A failure removes the partial file and marks the job
    failed, trying again while the database is locked. A job that has ended
    (done, or cancelled by an admin) is left as it is: a cancelled job is not
    written, and one cancelled while it is being written stops at its next chunk and keeps no file.
    """
    with jobs.job_lock(job_id) as held:
        job = Job.objects.select_related("project").get(pk=job_id)
        if not held or not job.is_active:
            return job
        if not _active(job.pk).update(status=Job.Status.RUNNING):
            job.refresh_from_db()  # cancelled between the read above and now
            return job
        restart_export(job)
        try:
            result = _write_export(job)
        except _Cancelled:
            shutil.rmtree(_job_folder(job.pk), ignore_errors=True)
        except Exception as error:
            shutil.rmtree(_job_folder(job.pk), ignore_errors=True)
            jobs.mark_failed(job.pk, str(error), only_if_active=True)
            raise
        else:
            if not _active(job.pk).update(
                status=Job.Status.DONE, done=job.total, result_path=str(result), finished_at=timezone.now()
            ):
                shutil.rmtree(_job_folder(job.pk), ignore_errors=True)  # cancelled after its last chunk
    jobs.forget_job_lock(job.pk)
    job.refresh_from_db()
    return job


class _Cancelled(Exception):
    """The job was cancelled while its file was being written: the writing stops."""


def _active(job_id: int) -> QuerySet[Job]:
    """The job's row while it is queued or running: a write through it leaves a cancelled job as it is."""
    return Job.objects.filter(pk=job_id, status__in=jobs.ACTIVE)


def cancel_export_job(job: Job, user: Any) -> Job:
    """Mark a queued or running export job failed, "Cancelled by <user> at <time>"; it writes no file, even if a
    worker picks it up later (a run under way stops at its next chunk and drops its file). The same export can be
    started again. Raises jobs.CancelRefused, changing nothing, when the job has already ended."""
    return jobs.cancel_job(job, user, kind=Job.Kind.EXPORT, finished_words=lambda _job: "its file is written")


def _write_export(job: Job) -> Path:
    """Write the job's file into its own folder (made afresh); the file's path."""
    options = ExportOptions.of_job(job.options)
    folder = _job_folder(job.pk)
    folder.mkdir(parents=True)
    stem = export_stem(job.project, options)

    def progress(done: int) -> None:
        if not _active(job.pk).update(done=done):
            raise _Cancelled

    if options.format == "faithbench":  # the zip the API streams, written to a file a chunk at a time
        result = folder / f"{stem}.zip"
        with result.open("wb") as handle:
            for chunk in faithbench_zip_chunks(job.project, options, progress):
                handle.write(chunk)
        return result
    result = folder / f"{stem}.{options.format}"
    export_to_path(job.project, result, options, progress)
    return result
