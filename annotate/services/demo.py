"""Demo data: three accounts, one span project and the written-for-the-project samples in fixtures/."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from annotate.models import Membership, Project
from annotate.services.ingest import import_batches, parse_samples_jsonl
from annotate.services.projects import add_member, assign_annotators, create_project

DEMO_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo.jsonl"
DEMO_PASSWORD = "demo"  # noqa: S105 - a public demo password; `make run` prints it
DEMO_PROJECT_SLUG = "demo"
DEMO_PROJECT_NAME = "Demo: news summaries"
DEMO_ANNOTATORS = ("alice", "bob")
DEMO_FIRST_BATCH = "demo-batch-1"


class DatabaseNotEmpty(Exception):
    """The demo is only loaded into a database with no users and no projects."""


def database_is_empty() -> bool:
    return not get_user_model().objects.exists() and not Project.objects.exists()


@transaction.atomic
def load_demo_data(path: Path | str = DEMO_FILE) -> Project:
    """Create admin, alice and bob (password "demo"), the demo project with its samples,
    and give alice and bob the first batch in round 1. Sentence embedding is queued
    by the import once the transaction commits."""
    if not database_is_empty():
        raise DatabaseNotEmpty("database not empty; demo data not loaded")
    path = Path(path)
    # Parse before writing anything: a bad file leaves the database as it was.
    parsed = parse_samples_jsonl(path.read_bytes(), path.name)
    User = get_user_model()
    admin = User.objects.create_superuser(username="admin", email="", password=DEMO_PASSWORD)
    annotators = [User.objects.create_user(username=name, password=DEMO_PASSWORD) for name in DEMO_ANNOTATORS]
    project = create_project(DEMO_PROJECT_NAME, slug=DEMO_PROJECT_SLUG, owner=admin)
    for user in annotators:
        add_member(project, user.get_username(), Membership.Role.ANNOTATOR)
    report = import_batches(project, parsed, created_by=admin)
    first_batch = next(batch for batch in report.batches if batch.name == DEMO_FIRST_BATCH)
    assign_annotators(first_batch, annotators, round=1)
    return project
