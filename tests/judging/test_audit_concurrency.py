"""Many auditors at once on PostgreSQL: row locks, not luck, keep an item from getting more audits than
``audits_per_item`` and an auditor from holding two serves (two tabs asking at the same moment).

Run with PostgreSQL (SQLite runs one write transaction at a time, so it cannot show what the locks do):

    FAITHLAB_DATA_DIR=$(mktemp -d) scripts/with-postgres.sh \
        .venv/bin/python -m pytest tests/judging/test_audit_concurrency.py -q -p no:cacheprovider
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from annotate.models import Batch, Passage, Project, Sample
from judging.models import Audit, JudgingSettings
from judging.services.audits import serve_next_audit, submit_audit
from tests.conftest import needs_postgres
from tests.judging.audit_helpers import flag, judge_sample, make_auditor, make_judge, make_run

pytestmark = [
    pytest.mark.django_db(transaction=True),
    needs_postgres,
]

AUDITORS = 8
ITEMS = 12
PER_ITEM = 2


def flagged_project() -> Project:
    project = Project.objects.create(name="Racing", slug="racing")
    batch = Batch.objects.create(project=project, name="b")
    passage = Passage.objects.create(project=project, external_id="p", text="A source.")
    judge = make_judge(project, "first", "nli", nli_model_path="/models/tiny")
    run = make_run(judge)
    for index in range(ITEMS):
        sample = Sample.objects.create(project=project, passage=passage, batch=batch, position=index,
                                       external_id=str(index), summary=f"Output {index}.")
        flag(sample, judge_sample(run, sample, probability=index / 100))
    JudgingSettings.objects.create(project=project, first_pass=judge, audits_per_item=PER_ITEM)
    return project


def audit_all(project_id: int, user_id: int, start_line: threading.Barrier, served: list[int], errors: list[str]) -> None:
    try:
        project = Project.objects.get(pk=project_id)
        auditor = get_user_model().objects.get(pk=user_id)
        start_line.wait(timeout=60)
        while (audit := serve_next_audit(project, auditor)) is not None:
            served.append(audit.item_id)
            submit_audit(project, auditor, audit.item_id, score=3, agreed=False, reasoning_wrong=False, note="")
    except Exception as error:  # noqa: BLE001  (reported by the test)
        errors.append(f"{type(error).__name__}: {error}")
    finally:
        connections.close_all()


def test_many_auditors_at_once_give_each_item_exactly_its_audits() -> None:
    project = flagged_project()
    auditors = [make_auditor(project, f"auditor-{index}") for index in range(AUDITORS)]
    served: list[list[int]] = [[] for _ in auditors]
    errors: list[str] = []
    start_line = threading.Barrier(AUDITORS)
    threads = [
        threading.Thread(target=audit_all, args=(project.pk, user.pk, start_line, served[index], errors))
        for index, user in enumerate(auditors)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads), "an auditor thread hung"
    assert not errors, "\n".join(errors)
    per_item = Counter(Audit.objects.filter(item__project=project).values_list("item_id", flat=True))
    assert sorted(per_item.values()) == [PER_ITEM] * ITEMS
    assert not Audit.objects.filter(item__project=project, answered_at__isnull=True).exists()
    for items in served:
        assert len(items) == len(set(items))  # nobody audited an item twice


def test_two_tabs_asking_at_once_get_one_serve() -> None:
    project = flagged_project()
    auditor = make_auditor(project, "tabs")
    start_line = threading.Barrier(2)
    got: list[Any] = []
    errors: list[str] = []

    def ask() -> None:
        try:
            user = get_user_model().objects.get(pk=auditor.pk)
            start_line.wait(timeout=60)
            got.append(serve_next_audit(Project.objects.get(pk=project.pk), user).pk)
        except Exception as error:  # noqa: BLE001
            errors.append(f"{type(error).__name__}: {error}")
        finally:
            connections.close_all()

    tabs = [threading.Thread(target=ask) for _ in range(2)]
    for tab in tabs:
        tab.start()
    for tab in tabs:
        tab.join(60)
    assert not errors, "\n".join(errors)
    assert len(got) == 2 and got[0] == got[1]
    assert Audit.objects.filter(auditor=auditor).count() == 1
