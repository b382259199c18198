"""The audits export carries ``sample_id`` (the sample's database id: external ids repeat across batches) and the
judge's answer the auditor saw (``judgement``, ``run``), added after the first columns so a CSV read by position keeps
reading the same values; joined on (run, sample_id) an audit finds its judgement's row in the judgements export."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from annotate.models import Batch, Membership, Project, Sample
from judging.models import Audit, AuditItem, Judge, Judgement, JudgeRun
from judging.services.export import AUDIT_FIELDS, export_lines
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db

FIRST_COLUMNS = (
    "item", "sample", "batch", "auditor", "score", "agreed", "reasoning_wrong", "note", "seconds", "blind",
    "blind_score", "judge", "judge_score_seen", "answered_at", "changed_at",
)


def test_audit_rows_name_the_sample_by_database_id_and_the_judgement_and_run_seen(
    project: Project, batch: Batch
) -> None:
    # The same external id "0" in two batches (as Create batches from selection makes).
    first = batch.samples.get(external_id="0")
    other_batch = Batch.objects.create(project=project, name="batch-2")
    copy = Sample.objects.create(project=project, batch=other_batch, passage=first.passage, position=0,
                                 external_id="0", summary=first.summary)
    judge = Judge.objects.create(project=project, name="gpt", kind=Judge.Kind.RUBRIC, base_url="http://x/v1", model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    seen = {sample.pk: Judgement.objects.create(run=run, sample=sample, status="ok", score=2, reasoning="r")
            for sample in (first, copy)}
    grace = make_user("grace")
    Membership.objects.create(project=project, user=grace, role=Membership.Role.AUDITOR)
    now = timezone.now()
    for sample in (first, copy):
        item = AuditItem.objects.create(project=project, sample=sample, flagged_by=seen[sample.pk], reason="2 <= 3")
        Audit.objects.create(item=item, auditor=grace, judgement=seen[sample.pk], score=3, served_at=now,
                             answered_at=now, seconds=1.0)
    unseen = AuditItem.objects.create(project=project, sample=batch.samples.get(external_id="1"), reason="added")
    Audit.objects.create(item=unseen, auditor=grace, judgement=None, score=4, served_at=now, answered_at=now)

    rows = [json.loads(line) for line in export_lines(project, what="audits", format="jsonl")]
    assert [(row["sample"], row["batch"], row["sample_id"], row["judgement"], row["run"]) for row in rows] == [
        ("0", "batch-1", first.pk, seen[first.pk].pk, run.pk),
        ("0", "batch-2", copy.pk, seen[copy.pk].pk, run.pk),
        ("1", "batch-1", unseen.sample_id, None, None),
    ]
    # The judgements export's row of the answer seen: the one with that run and sample_id.
    judgements = [json.loads(line) for line in export_lines(project, what="judgements", format="jsonl")]
    for audit_row in rows[:2]:
        matches = [row for row in judgements if (row["run"], row["sample_id"]) == (audit_row["run"], audit_row["sample_id"])]
        assert [row["batch"] for row in matches] == [audit_row["batch"]]

    table = list(csv.reader(io.StringIO("".join(export_lines(project, what="audits", format="csv")), newline="")))
    assert tuple(table[0][:len(FIRST_COLUMNS)]) == FIRST_COLUMNS  # the first columns keep their places
    assert tuple(table[0]) == AUDIT_FIELDS == (*FIRST_COLUMNS, "sample_id", "judgement", "run")
    assert [cells[-3:] for cells in table[1:]] == [
        [str(first.pk), str(seen[first.pk].pk), str(run.pk)],
        [str(copy.pk), str(seen[copy.pk].pk), str(run.pk)],
        [str(unseen.sample_id), "", ""],
    ]


def test_the_audit_page_download_of_an_auditor_carries_the_new_columns(project: Project, batch: Batch) -> None:
    grace = make_user("grace")
    Membership.objects.create(project=project, user=grace, role=Membership.Role.AUDITOR)
    sample = batch.samples.get(external_id="2")
    item = AuditItem.objects.create(project=project, sample=sample, reason="added")
    Audit.objects.create(item=item, auditor=grace, score=5, served_at=timezone.now(), answered_at=timezone.now())
    body: Any = login(grace).get(reverse("judging-export-audits", args=[project.slug]) + "?format=jsonl")
    assert body.status_code == 200
    (row,) = [json.loads(line) for line in b"".join(body.streaming_content).decode().splitlines()]
    assert (row["sample"], row["sample_id"], row["judgement"], row["run"]) == ("2", sample.pk, None, None)
