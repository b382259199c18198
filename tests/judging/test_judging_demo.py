"""The judging demo: imported judges, triage settings, flagged outputs in grace's audit queue, quotes that exist."""

from __future__ import annotations

import json
import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from annotate.models import Membership, Project, Sample
from judging.models import AuditItem, Judge, Judgement, JudgeRun, SyntheticItem, SyntheticSet
from judging.quotes import find_quotes
from judging.services.audits import audit_progress, serve_next_audit
from judging.services.demo import DEMO_EXPLAINER, DEMO_FIRST_PASS, DEMO_JUDGEMENTS_FILE
from judging.services.judges import judging_settings

# The demo's first pass gives p < 0.5 (the default threshold) to these outputs (demo.jsonl line numbers):
# the ones with wrong figures or names that a fast judge catches.
FLAGGED = {"2", "7", "18", "22", "30"}


@pytest.fixture
def demo(db: None) -> Project:
    call_command("load_demo", stdout=StringIO())
    return Project.objects.get(slug="demo")


def fixture_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in DEMO_JUDGEMENTS_FILE.read_text(encoding="utf-8").splitlines()]


@pytest.mark.django_db
def test_grace_is_an_auditor_of_the_demo_project_and_logs_in_with_the_demo_password(demo: Project) -> None:
    grace = get_user_model().objects.get(username="grace")
    assert Membership.objects.get(project=demo, user=grace).role == Membership.Role.AUDITOR
    assert not Membership.objects.filter(user=grace).exclude(project=demo).exists()
    assert Client().login(username="grace", password="demo")


@pytest.mark.django_db
def test_both_judges_outputs_are_imported_for_every_demo_sample(demo: Project) -> None:
    judges = {judge.name: judge for judge in Judge.objects.filter(project=demo)}
    assert set(judges) == {DEMO_FIRST_PASS, DEMO_EXPLAINER}
    assert {judge.kind for judge in judges.values()} == {Judge.Kind.IMPORTED}
    samples = Sample.objects.filter(project=demo).count()
    for name, judge in judges.items():
        run = JudgeRun.objects.get(judge=judge)
        assert (run.scope, run.status, run.total) == ("imported", "done", samples), name
    first_pass = Judgement.objects.filter(run__judge=judges[DEMO_FIRST_PASS])
    assert first_pass.filter(status="ok", probability__isnull=False, score__isnull=True).count() == samples
    explainer = Judgement.objects.filter(run__judge=judges[DEMO_EXPLAINER])
    assert sorted(set(explainer.values_list("score", flat=True).exclude(score=None))) == [1, 2, 3, 4, 5]
    # One answer the explainer's endpoint gave in prose: kept raw, never turned into a number.
    failed = explainer.get(status="parse_error")
    assert failed.score is None and failed.raw and failed.sample.external_id == "12"


@pytest.mark.django_db
def test_triage_settings_name_the_first_pass_and_the_explainer(demo: Project) -> None:
    settings = judging_settings(demo)
    assert settings.first_pass.name == DEMO_FIRST_PASS and settings.explainer.name == DEMO_EXPLAINER
    assert (settings.llm_flag_at_most, settings.nli_flag_below) == (3, 0.5)


@pytest.mark.django_db
def test_the_audit_queue_holds_the_outputs_the_first_pass_flagged(demo: Project) -> None:
    items = AuditItem.objects.filter(project=demo).select_related("sample", "flagged_by__run__judge")
    assert {item.sample.external_id for item in items} == FLAGGED
    assert 4 <= len(FLAGGED) <= 6
    below = {line["sample"] for line in fixture_lines() if line["judge"] == DEMO_FIRST_PASS and line["p"] < 0.5}
    assert below == FLAGGED  # the flags follow from the file and the default threshold
    assert {item.flagged_by.run.judge.name for item in items} == {DEMO_FIRST_PASS}
    assert JudgeRun.objects.get(judge__name=DEMO_FIRST_PASS).flagged == len(FLAGGED)

    grace = get_user_model().objects.get(username="grace")
    assert audit_progress(demo, grace) == {
        "answered": 0, "left": len(FLAGGED), "items": len(FLAGGED), "complete": 0, "audits_per_item": 1}
    served = serve_next_audit(demo, grace)
    assert served is not None and served.item.sample.external_id in FLAGGED


@pytest.mark.django_db
def test_every_passage_the_reasoning_quotes_is_in_the_source_or_the_output(demo: Project) -> None:
    reasonings = Judgement.objects.filter(run__judge__name=DEMO_EXPLAINER).exclude(reasoning="").select_related(
        "sample__passage")
    assert reasonings.count() == 29
    quoted = 0
    for judgement in reasonings:
        source, output = judgement.sample.passage.text, judgement.sample.summary
        passages = re.findall(r'"([^"]+)"', judgement.reasoning)
        assert passages, judgement.sample.external_id  # every reasoning quotes something
        for passage in passages:
            assert passage in source or passage in output, (judgement.sample.external_id, passage)
        # ... and the audit page's own quote finder finds each one too.
        found = find_quotes(judgement.reasoning, source, output)
        assert {hit["quote"] for hit in found} == set(passages)
        assert all(hit["where"] in ("source", "output") for hit in found), judgement.sample.external_id
        quoted += len(passages)
    assert quoted > 60


@pytest.mark.django_db
def test_first_pass_sentence_scores_cover_each_output_sentence(demo: Project) -> None:
    from annotate.text import split_sentences

    for judgement in Judgement.objects.filter(run__judge__name=DEMO_FIRST_PASS).select_related("sample"):
        figures = judgement.sentence_scores
        assert len(figures) == len(split_sentences(judgement.sample.summary))
        assert judgement.probability == min(figures)


@pytest.mark.django_db
def test_the_demo_synthetic_set_nests_rewrites_of_the_faithful_outputs(demo: Project) -> None:
    synthetic = SyntheticSet.objects.get(project=demo, name="demo-synthetic")
    assert synthetic.status == SyntheticSet.Status.DONE and synthetic.error == ""
    items = SyntheticItem.objects.filter(synthetic_set=synthetic)
    # Six two-sentence outputs: a gold item each, and 50% and 100% per type.
    assert items.filter(type="gold").count() == 6
    assert sorted(set(items.values_list("percent", flat=True))) == [0, 50, 100]
    assert items.count() == 6 * (1 + 2 * 2)
