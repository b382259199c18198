"""What the commands that run an annotate job in the foreground (`embed`, `perturb_pairs`) do on Ctrl-C
(annotate.services.interrupt): the first cancels the job at its service's next check, as the page's Cancel does,
and the command prints one line and exits with 130; the second leaves at once, cancelling the job first if the
first was not noticed yet. (judging.management.foreground does the same for judge runs.)"""

from __future__ import annotations

from typing import NoReturn

from django.core.management.base import OutputWrapper

from annotate.models import Job
from annotate.services.interrupt import EXIT_INTERRUPTED, stop_at_once
from annotate.services.jobs import CancelRefused, cancel_job_from_command


def stop_interrupted(stderr: OutputWrapper, line: str) -> NoReturn:
    """The first Ctrl-C, once the job stopped: its one line on stderr, and exit status 130."""
    stderr.write(line)
    raise SystemExit(EXIT_INTERRUPTED)


def cancelled_line(job: Job, what: str, rest: str) -> str:
    """The one line of a job cancelled by Ctrl-C: "Job 3 cancelled (Ctrl-C): 64 of 200 texts embedded, 136 not.
    <rest>" (``what``: "texts embedded"; ``rest``: how to go on)."""
    left = max(0, job.total - job.done)
    return f"Job {job.pk} cancelled (Ctrl-C): {job.done} of {job.total} {what}, {left} not. {rest}"


def leave_at_once(job: Job | None, command: str) -> NoReturn:
    """A second Ctrl-C: cancel the job started here if the first was not noticed yet, say so in one line, leave."""
    stop_at_once(_at_once(job, command))


def _at_once(job: Job | None, command: str) -> str:
    if job is None:
        return "Stopped (Ctrl-C twice); no job had started."
    try:
        try:
            cancel_job_from_command(job, command)
        except CancelRefused:
            pass  # cancelled by the first Ctrl-C already, or ended
        job.refresh_from_db()
    except Job.DoesNotExist:  # stopped inside the transaction that creates it: rolled back
        return "Stopped (Ctrl-C twice); no job had started."
    except Exception:  # noqa: BLE001 - leaving now matters more; a worker's restart would resume it
        return (f"Stopped (Ctrl-C twice); job {job.pk} could not be marked cancelled: cancel it on the project page, "
                "or a worker's start resumes it.")
    return (f"Stopped (Ctrl-C twice); job {job.pk} is {job.status_label.lower()}, {job.done} of {job.total} done "
            "(kept).")
