"""Perturb a pairs project's waiting originals in the foreground, through the same service the background job uses.

Ctrl-C cancels the job before its next original (those perturbed stay), prints one line and exits with 130; a second
Ctrl-C leaves at once (annotate.services.interrupt)."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project, positive_int
from annotate.management.foreground import cancelled_line, leave_at_once, stop_interrupted
from annotate.models import Job, Project
from annotate.services import interrupt, jobs
from annotate.services.interrupt import cancel_on_ctrl_c
from annotate.services.pairs import perturb


class Command(BaseCommand):
    help = (
        "Perturb every original text of a pairs project that has no perturbed text yet (MASK -> REPLACE -> "
        "RANK with the project's models and parameters); each becomes one perturbed text whose replaced spans "
        "are items in the pool. Running it again continues with what is left."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="pairs project slug")
        parser.add_argument("--seed", default=None, help="random seed (default: a new one, printed)")

    def handle(self, *args: Any, **options: Any) -> None:
        project = get_project(options["project"])
        seed = None if options["seed"] is None else positive_int(options["seed"], "--seed", allow_zero=True)
        # From here on, Ctrl-C cancels the job executing here instead of leaving it "running" (interrupt module).
        self.job: Job | None = None
        with cancel_on_ctrl_c("perturb_pairs"):
            try:
                self._perturb(project, seed)
            except KeyboardInterrupt:  # the second Ctrl-C
                leave_at_once(self.job, "perturb_pairs")

    def _perturb(self, project: Project, seed: int | None) -> None:
        def start() -> Job | None:
            self.job = perturb.start_perturbation(project, None, seed=seed, queue=False)
            return self.job

        with ExitStack() as holding:
            # Run here, its lock held from before the job is committed: a worker starting meanwhile leaves it alone.
            if interrupt.requested():
                stop_interrupted(self.stderr, "Interrupted (Ctrl-C) before the job started: nothing was written.")
            try:
                job, held = jobs.start_held(holding, start, jobs.job_lock)
            except perturb.NothingToPerturb as nothing:
                self.stdout.write(f"Nothing to do: {nothing}.")
                return
            except perturb.PerturbationError as error:
                raise CommandError(f"perturbation not started: {error}") from None
            assert job is not None
            self.stdout.write(f"Perturbing {job.total} original text(s) of {project.slug} (job {job.pk}, "
                              f"seed {job.options['seed']})")

            def progress(current: Job) -> None:
                self.stdout.write(f"  {current.done} of {current.total} done")

            job = perturb.run_perturbation_job(job.pk, progress=progress, lock_held=held)
        if job.cancelled_by and interrupt.requested():
            stop_interrupted(self.stderr, cancelled_line(
                job, "original texts done", "The perturbed texts and their items stay; `manage.py perturb_pairs "
                f"--project {project.slug}` goes on with the rest."))
        if job.status != Job.Status.DONE:
            raise CommandError(f"perturbation failed: {job.error}")
        summary = job.options
        self.stdout.write(
            f"Done: {summary['perturbed']} perturbed text(s), {summary['items']} item(s) in the pool; "
            f"{summary['skipped_count']} original(s) had no word to replace after the kept sentences"
            + (f" ({', '.join(summary['skipped'])})" if summary["skipped"] else "")
            + f". Models: {summary['models']['masked_lm']} (masked LM), {summary['models']['causal_lm']} "
            f"(causal LM), {summary['models']['spacy_pipeline']} (spaCy)."
        )
