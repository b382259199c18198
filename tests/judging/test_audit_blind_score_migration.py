"""Migration 0005 gives audits stored before it the blind score that can be known: a blind audit's final score is the
one given blind, so it becomes its blind_score; an audit stored as not blind keeps none (a blind score changed after
the reveal was not stored then, and is not guessed now)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from tests.migrations import migrate, migrate_to_latest

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("judging", "0004_run_resumed")]
AFTER = [("judging", "0005_audit_blind_score")]


def test_blind_audits_get_their_score_as_blind_score_and_the_others_none() -> None:
    old = migrate(BEFORE)
    try:
        user = old.get_model("auth", "User").objects.create(username="grace")
        project = old.get_model("annotate", "Project").objects.create(name="P", slug="p")
        passage = old.get_model("annotate", "Passage").objects.create(project=project, text="Source text.")
        batch = old.get_model("annotate", "Batch").objects.create(project=project, name="b")
        item_model = old.get_model("judging", "AuditItem")
        audit_model = old.get_model("judging", "Audit")
        now = timezone.now()
        made = {}
        for position, (score, blind) in enumerate([(4, True), (2, False), (None, False)]):
            sample = old.get_model("annotate", "Sample").objects.create(
                project=project, batch=batch, passage=passage, summary=f"Output {position}.", position=position,
                external_id=str(position),
            )
            item = item_model.objects.create(project=project, sample=sample, reason="flagged")
            made[(score, blind)] = audit_model.objects.create(
                item=item, auditor=user, score=score, blind=blind, served_at=now,
                answered_at=now if score is not None else None,
            ).pk

        new = migrate(AFTER)
        stored = {pk: new.get_model("judging", "Audit").objects.get(pk=pk) for pk in made.values()}
        assert stored[made[(4, True)]].blind_score == 4
        assert stored[made[(2, False)]].blind_score is None
        assert stored[made[(None, False)]].blind_score is None
        assert all(audit.changed_at is None for audit in stored.values())
    finally:
        migrate_to_latest()
