"""manage.py load_demo [--if-empty]: accounts, a project and samples to try FaithLab with."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.template.defaultfilters import pluralize

from annotate.models import PairItem
from annotate.services.demo import DEMO_PASSWORD, DEMO_USERNAMES, DatabaseNotEmpty, demo_accounts_exist, load_demo_data
from annotate.services.ingest import ImportFailed
from annotate.services.pairs.demo import DEMO_PAIRS_SLUG


class Command(BaseCommand):
    help = (
        "Load the demo users (admin, alice, bob, carol, dave, erin, frank, grace; password 'demo'), project and samples "
        "into an empty database."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--if-empty",
            action="store_true",
            help="Do nothing (and succeed) when the database already has users or projects.",
        )

    def handle(self, *args: Any, if_empty: bool = False, **options: Any) -> None:
        try:
            project = load_demo_data()
        except DatabaseNotEmpty as error:
            if if_empty:
                self.stdout.write(str(error))
                # `make run` on the demo's own database: its accounts are still there to log in with.
                if demo_accounts_exist():
                    self.stdout.write(f"demo accounts: {', '.join(DEMO_USERNAMES)}; password {DEMO_PASSWORD!r}")
                return
            raise CommandError(str(error)) from None
        except ImportFailed as error:
            raise CommandError(str(error)) from None
        pair_items = PairItem.objects.filter(project__slug=DEMO_PAIRS_SLUG).count()
        batches, samples = project.batches.count(), project.samples.count()
        self.stdout.write(
            self.style.SUCCESS(
                f"Loaded project {project.slug!r}: {batches} batch{pluralize(batches, 'es')}, {samples} "
                f"sample{pluralize(samples)}; pairs project {DEMO_PAIRS_SLUG!r}: {pair_items} item{pluralize(pair_items)}; "
                f"users {', '.join(DEMO_USERNAMES)} with password {DEMO_PASSWORD!r}."
            )
        )
