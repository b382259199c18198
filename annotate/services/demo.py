"""Demo data: seven accounts, a span project and a pairs project, written for this project, in fixtures/.

alice and bob have the first batch to annotate. carol and dave have already
finished round 1 of the second batch (fixtures/demo_round1.jsonl), so the
agreement, results and curation pages show figures at once and an admin can
open round 2 of that batch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from annotate.models import Batch, Membership, Project
from annotate.services.ingest import ImportFailed, import_batches, parse_samples_jsonl
from annotate.services.pairs.demo import DEMO_PAIR_JUDGES, DEMO_PAIR_LABELERS, load_pair_demo
from annotate.services.projects import add_member, assign_annotators, create_project
from annotate.services.spans import create_span, mark_sample_done
from judging.services.demo import DEMO_AUDITORS, load_judging_demo

DEMO_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo.jsonl"
DEMO_PASSWORD = "demo"  # noqa: S105 - a public demo password; `make run` prints it
DEMO_PROJECT_SLUG = "demo"
DEMO_PROJECT_NAME = "Demo: news summaries"
DEMO_ANNOTATORS = ("alice", "bob")
DEMO_FIRST_BATCH = "demo-batch-1"
DEMO_ROUND_ONE_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo_round1.jsonl"
DEMO_ROUND_ONE_ANNOTATORS = ("carol", "dave")
DEMO_SECOND_BATCH = "demo-batch-2"
# Every demo account, admin first: admin, alice, bob, carol, dave, erin, frank, grace.
DEMO_USERNAMES = (
    "admin",
    *dict.fromkeys((*DEMO_ANNOTATORS, *DEMO_ROUND_ONE_ANNOTATORS, *DEMO_PAIR_LABELERS, *DEMO_PAIR_JUDGES, *DEMO_AUDITORS)),
)


class DatabaseNotEmpty(Exception):
    """The demo is only loaded into a database with no users and no projects."""


def database_is_empty() -> bool:
    return not get_user_model().objects.exists() and not Project.objects.exists()


def demo_accounts_exist() -> bool:
    """Whether every demo account is there (the demo was loaded into this database), so `make run` may name them."""
    return get_user_model().objects.filter(username__in=DEMO_USERNAMES).count() == len(DEMO_USERNAMES)


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
    names = DEMO_ANNOTATORS + DEMO_ROUND_ONE_ANNOTATORS
    people = {name: User.objects.create_user(username=name, password=DEMO_PASSWORD) for name in DEMO_USERNAMES[1:]}
    project = create_project(DEMO_PROJECT_NAME, slug=DEMO_PROJECT_SLUG, owner=admin)
    for name in names:
        add_member(project, name, Membership.Role.ANNOTATOR)
    report = import_batches(project, parsed, created_by=admin)
    batches = {batch.name: batch for batch in report.batches}
    assign_annotators(batches[DEMO_FIRST_BATCH], [people[name] for name in DEMO_ANNOTATORS], round=1)
    annotate_round_one(batches[DEMO_SECOND_BATCH], [people[name] for name in DEMO_ROUND_ONE_ANNOTATORS])
    load_pair_demo(admin, people)
    load_judging_demo(admin, people)
    return project


def annotate_round_one(batch: Batch, annotators: list[Any], path: Path = DEMO_ROUND_ONE_FILE) -> None:
    """Assign ``annotators`` to the batch, save their spans from ``path`` and mark every sample done.

    Each line names a sample by passage and generator and quotes the span (and
    optionally the linked source text); the offsets are where the quote occurs.
    """
    assign_annotators(batch, annotators, round=1)
    by_name = {user.get_username(): user for user in annotators}
    samples = {(sample.passage.external_id, sample.generator): sample for sample in batch.samples.select_related("passage")}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        entry = json.loads(line)
        where = f"{path.name}: line {number}"
        sample = samples.get((entry["passage_id"], entry["generator"]))
        if sample is None:
            raise ImportFailed(f"{where}: no sample of {entry['passage_id']!r} by {entry['generator']!r} in {batch.name}")
        start = _find(sample.summary, entry["summary_span"], f"{where}: field 'summary_span'")
        link: dict[str, int] = {}
        if entry.get("source_span"):
            source_start = _find(sample.passage.text, entry["source_span"], f"{where}: field 'source_span'")
            link = {"source_start": source_start, "source_end": source_start + len(entry["source_span"])}
        create_span(
            sample,
            by_name[entry["annotator"]],
            round=1,
            start=start,
            end=start + len(entry["summary_span"]),
            labels=entry["label"],
            note=entry.get("note", ""),
            **link,
        )
    for user in annotators:
        for sample in samples.values():
            # A plausible reading time: longer summaries took longer.
            mark_sample_done(sample, user, round=1, done=True, seconds=20 + len(sample.summary) // 4)


def _find(text: str, quote: str, where: str) -> int:
    at = text.find(quote)
    if at < 0:
        raise ImportFailed(f"{where}: {quote!r} is not in the text")
    return at
