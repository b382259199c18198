"""What every background job shares, whichever app and kind: telling work in hand from orphaned work, sending a
job's task after its commit, recording a failure on a busy database, resuming jobs at a worker's start, cancelling.

Modules: ``locks`` (a lock file held while work executes, the messages waiting
in the embedded broker's queue; judging's runs and synthetic sets use them too),
``sending`` (queue a job's task on commit; a refused send fails the job instead
of stranding it), ``failure`` (the failed-state write, tried again while the
database is locked), ``recovery`` (what a starting worker queues again) and
``cancel`` (a job's wait, and an admin's cancel).
"""

from __future__ import annotations

from annotate.services.jobs.cancel import (
    NO_WORKER_AFTER,
    CancelRefused,
    JobWait,
    cancel_if_interrupted,
    cancel_job,
    cancel_job_from_command,
    cancelled_message,
    ended_in_words,
    job_wait,
    no_worker_notice,
)
from annotate.services.jobs.failure import ACTIVE, is_lock_error, mark_failed, retry_when_locked
from annotate.services.jobs.locks import (
    exclusive,
    forget_job_lock,
    is_job_executing,
    job_lock,
    lock_file,
    orphaned_ids,
    start_held,
    waiting_ids,
)
from annotate.services.jobs.recovery import RESUMING_TASKS, resume_stale_jobs, resuming_task, stopped_message
from annotate.services.jobs.sending import not_queued_message, queue_job, resumable_message, send_job

__all__ = [
    "ACTIVE",
    "NO_WORKER_AFTER",
    "RESUMING_TASKS",
    "CancelRefused",
    "JobWait",
    "cancel_if_interrupted",
    "cancel_job",
    "cancel_job_from_command",
    "cancelled_message",
    "ended_in_words",
    "exclusive",
    "forget_job_lock",
    "is_job_executing",
    "is_lock_error",
    "job_lock",
    "job_wait",
    "lock_file",
    "mark_failed",
    "no_worker_notice",
    "not_queued_message",
    "orphaned_ids",
    "queue_job",
    "resumable_message",
    "resume_stale_jobs",
    "resuming_task",
    "retry_when_locked",
    "send_job",
    "start_held",
    "stopped_message",
    "waiting_ids",
]
