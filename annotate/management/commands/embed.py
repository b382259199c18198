"""manage.py embed --project SLUG [--all] [--queue]

Embed a span project's texts whose sentence vectors are missing or were made by another model than
EMBEDDING_MODEL, through the same service the background job uses: in the foreground, or queued for the worker.
In the foreground, Ctrl-C cancels the job after the texts in hand (those embedded stay), prints one line and exits
with 130; a second Ctrl-C leaves at once (annotate.services.interrupt).
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate import embedder
from annotate.management.commands.agreement import get_project
from annotate.management.foreground import cancelled_line, leave_at_once, stop_interrupted
from annotate.models import Job, Project
from annotate.services import embedding, interrupt, jobs, reembedding
from annotate.services.interrupt import cancel_on_ctrl_c


class Command(BaseCommand):
    help = (
        "Split and embed the sentences of a span project's texts that have no vectors of the configured model "
        "(EMBEDDING_MODEL): never embedded, embedded with another model, or left by a cancelled or failed "
        "embedding job. Texts already embedded with it are skipped. Runs here unless --queue."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="span project slug")
        parser.add_argument("--all", action="store_true", dest="every_text",
                            help="embed every text again, also those already embedded with the configured model "
                                 "(after its files were replaced under the same name); highlighting waits for it once it runs")
        parser.add_argument("--queue", action="store_true",
                            help="queue the job for the worker and return, instead of running it here")

    def handle(self, *args: Any, **options: Any) -> None:
        project = get_project(options["project"])
        if project.kind != Project.Kind.SPANS:
            raise CommandError(f"--project: {project.slug!r} is a {project.kind} project; only span projects' texts "
                               "are embedded")
        model = embedder.model_name()
        if options["queue"]:
            job, new = self._start(project, options["every_text"], queue=True)
            if job is None:
                self.stdout.write(f"Nothing to do: every text of {project.slug} is embedded with {model}.")
            else:
                self._say_queued(project, job, new, model)
            return
        # From here on, Ctrl-C cancels the job executing here instead of leaving it "running" (interrupt module).
        self.job: Job | None = None
        with cancel_on_ctrl_c("embed"):
            try:
                self._embed_here(project, options, model)
            except KeyboardInterrupt:  # the second Ctrl-C
                leave_at_once(self.job, "embed")

    def _embed_here(self, project: Project, options: dict[str, Any], model: str) -> None:
        with ExitStack() as holding:
            # Run here, its lock held from before a new job is committed: a worker starting meanwhile leaves it alone.
            started: list[bool] = []

            def start() -> Job | None:
                job, new = self._start(project, options["every_text"], queue=False)
                started.append(new)
                self.job = job
                return job

            if interrupt.requested():
                stop_interrupted(self.stderr, "Interrupted (Ctrl-C) before the job started: nothing was written.")
            job, held = jobs.start_held(holding, start, jobs.job_lock)
            if job is None:
                self.stdout.write(f"Nothing to do: every text of {project.slug} is embedded with {model}.")
                return
            if started[0]:
                self.stdout.write(f"Embedding {job.total} text(s) of {project.slug} with {model} (job {job.pk})")
            else:
                self.stdout.write(f"Running embedding job {job.pk} of {project.slug} here ({job.status}, {job.done} "
                                  f"of {job.total} texts done), with {model}")
            try:
                job = embedding.run_embedding_job(job.pk, lock_held=held)
            except embedder.EmbeddingModelError as error:
                raise CommandError(f"embedding failed (job {job.pk}): {error}") from None
        if job.cancelled_by and interrupt.requested():
            stop_interrupted(self.stderr, cancelled_line(
                job, "texts embedded", f"The texts embedded stay; `manage.py embed --project {project.slug}` "
                "embeds the rest."))
        if job.is_active:  # a worker holds the job's lock: it is doing the work
            self.stdout.write(f"A worker is running job {job.pk} ({job.done} of {job.total} texts done); nothing "
                              "was done here.")
        elif job.status != Job.Status.DONE:
            raise CommandError(f"embedding job {job.pk} did not finish: {job.error}")
        else:
            self.stdout.write(f"Done: {job.total} text(s) embedded with {model}; {reembedding.stale_count(project)} "
                              "left without vectors of it.")

    @staticmethod
    def _start(project: Project, every_text: bool, *, queue: bool) -> tuple[Job | None, bool]:
        try:
            return reembedding.start_embedding(project, every_text=every_text, queue=queue)
        except reembedding.EmbedRefused as refusal:
            raise CommandError(str(refusal)) from None

    def _say_queued(self, project: Project, job: Job, new: bool, model: str) -> None:
        if job.status == Job.Status.FAILED:  # the broker refused the task: the job says why
            raise CommandError(f"embedding job {job.pk} could not be queued: {job.error}")
        if new:
            self.stdout.write(f"Queued job {job.pk}: {job.total} text(s) of {project.slug} to embed with {model}; "
                              "the project page shows its progress.")
        else:
            self.stdout.write(f"Embedding job {job.pk} of {project.slug} is already {job.status} ({job.done} of "
                              f"{job.total} texts done); nothing new was queued.")
