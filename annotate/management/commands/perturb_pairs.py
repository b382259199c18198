"""Perturb a pairs project's waiting originals in the foreground, through the same service the background job uses."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.management.commands.agreement import get_project, positive_int
from annotate.models import Job
from annotate.services import jobs
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
        with ExitStack() as holding:
            # Run here, its lock held from before the job is committed: a worker starting meanwhile leaves it alone.
            try:
                job, held = jobs.start_held(
                    holding, lambda: perturb.start_perturbation(project, None, seed=seed, queue=False), jobs.job_lock
                )
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
