"""The demo pairs project: made-up texts with hand-made perturbations, a first round partly judged.

fixtures/demo_pairs.jsonl holds 72 items (12 short texts, each with two perturbed
versions replacing three spans) in FaithLab's pair format, and
fixtures/demo_pairs_guidelines.txt the project's guidelines, written for these
texts. Round 1 draws 30 of the items at random (seeded).
carol, dave and erin have judged the first 26 drawn items honestly (dave and
erin make the odd mistake, which splits one item, demo-36, and sends it to two
more judges) and frank has judged them like a spammer: always H, in a few
seconds. So agreement, the spammer flags and the round-2 wizard show figures on
first run, and alice and bob still have items to label, the split one first.
"""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotate.models import Membership, PairItem, PairJudgement, Project
from annotate.services.pairs import flags, queue, rounds, vectors
from annotate.services.pairs.config import get_config
from annotate.services.pairs.ingest import import_pairs
from annotate.services.projects import add_member

DEMO_PAIRS_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo_pairs.jsonl"
DEMO_PAIR_JUDGEMENTS_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo_pair_judgements.jsonl"
DEMO_PAIR_GUIDELINES_FILE = Path(settings.BASE_DIR) / "fixtures" / "demo_pairs_guidelines.txt"
DEMO_PAIRS_SLUG = "demo-pairs"
DEMO_PAIRS_NAME = "Demo: perturbed pairs"
DEMO_PAIR_LABELERS = ("alice", "bob")  # left with work to do
DEMO_PAIR_JUDGES = ("carol", "dave", "erin", "frank")  # frank behaves like a spammer
DEMO_ROUND_SIZE = 30
DEMO_JUDGED_ITEMS = 26
DEMO_SEED = 11


@transaction.atomic
def load_pair_demo(admin: Any, people: dict[str, Any]) -> Project:
    """Create the demo pairs project with ``admin`` as its admin and ``people`` (by username) as annotators."""
    report = import_pairs(
        DEMO_PAIRS_SLUG, [(DEMO_PAIRS_FILE.name, DEMO_PAIRS_FILE.read_bytes())], fmt="pairs", user=admin
    )
    project = report.project
    project.name = DEMO_PAIRS_NAME
    project.guidelines = DEMO_PAIR_GUIDELINES_FILE.read_text(encoding="utf-8")
    project.save(update_fields=["name", "guidelines"])
    for name in (*DEMO_PAIR_LABELERS, *DEMO_PAIR_JUDGES):
        add_member(project, name, Membership.Role.ANNOTATOR)
    first = rounds.create_round(project, admin, size=DEMO_ROUND_SIZE, low=0.0, high=1.0, seed=DEMO_SEED)
    drawn = list(PairItem.objects.filter(round=first).order_by("id")[:DEMO_JUDGED_ITEMS])
    record_demo_judgements(project, drawn, {name: people[name] for name in DEMO_PAIR_JUDGES})
    # The round-2 wizard needs the span vectors; the worker computes them once the transaction commits.
    vectors.start_vector_job(project, admin)
    return project


def record_demo_judgements(project: Project, items: list[PairItem], judges: dict[str, Any]) -> None:
    """Write the fixture's judgements of ``items`` as if served and answered an hour ago, in file order."""
    by_external_id = {item.external_id: item for item in items}
    config = get_config(project)
    start = timezone.now() - timedelta(hours=1)
    rows = []
    clock = start
    for line in DEMO_PAIR_JUDGEMENTS_FILE.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        item = by_external_id.get(entry["item_id"])
        if item is None:
            continue
        served = clock
        clock = served + timedelta(seconds=entry["seconds"])
        rows.append(
            PairJudgement(
                item=item, judge=judges[entry["judge"]], round=item.round, label=entry["label"],
                served_at=served, answered_at=clock, seconds=entry["seconds"],
            )
        )
    PairJudgement.objects.bulk_create(rows)
    items = queue.recount_items([item.pk for item in items], config)
    for judge in judges.values():
        flags.check_judge(project, judge)
