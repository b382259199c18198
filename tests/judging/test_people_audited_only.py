"""Judge vs people reads only the judge's judgements of audited samples, in the database, and its figures are the
ones worked out from every judgement (latest_judgements' rule: the most recent run's judgement of each sample)."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from annotate.models import Project, Sample
from judging.models import Audit, AuditItem, Judge, Judgement, JudgeRun
from judging.people import AuditRating, people_figures
from judging.services import people
from judging.services.judges import judging_settings
from judging.services.runs import latest_judgements
from judging.services.triage import is_flagged
from tests.conftest import login

pytestmark = pytest.mark.django_db


def figures_from_every_judgement(project: Project, judge: Judge) -> dict[str, Any]:
    """judge_vs_people's figures worked out as it did before, from the judge's latest judgement of every sample."""
    settings = judging_settings(project)
    judgements = latest_judgements(project, judge).get(judge.pk, {})
    ratings = [
        AuditRating(sample_id, auditor_id, score,
                    judgements[sample_id].display_score if sample_id in judgements else None)
        for sample_id, auditor_id, score in Audit.objects.filter(item__project=project, score__isnull=False)
        .order_by("item_id", "auditor_id").values_list("item__sample_id", "auditor_id", "score")
    ]
    flagged = {sample_id for sample_id, judgement in judgements.items() if is_flagged(judgement, settings)}
    return {
        **people_figures(ratings, flagged=flagged, flag_at_most=settings.llm_flag_at_most),
        "probability": judge.kind == Judge.Kind.NLI or any(j.probability is not None for j in judgements.values()),
    }


@pytest.fixture
def audited(batch: Any, admin_user: Any, alice: Any) -> dict[str, Any]:
    """An imported-style rubric judge over ten samples, of which two are audited; its runs overlap."""
    project = batch.project
    extra = [
        Sample.objects.create(project=project, passage=batch.samples.first().passage, batch=batch, position=3 + n,
                              external_id=f"x{n}", summary="Another summary.")
        for n in range(7)
    ]
    samples = [*batch.samples.filter(position__lt=3).order_by("position"), *extra]
    judge = Judge.objects.create(project=project, name="imported", kind=Judge.Kind.RUBRIC)
    old = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    new = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    for position, sample in enumerate(samples):
        Judgement.objects.create(run=old, sample=sample, status="ok", score=5)
        if position % 2 == 0:  # the later run replaces half of them
            Judgement.objects.create(run=new, sample=sample, status="ok", score=1 + position % 5)
    # A probability only on a sample nobody audits, in the latest run: the page says how p becomes a level.
    Judgement.objects.create(run=new, sample=samples[9], status="ok", probability=0.2)
    now = timezone.now()
    for sample, scores in ((samples[0], (2, 1)), (samples[1], (4, 5))):
        item = AuditItem.objects.create(project=project, sample=sample, reason="test")
        for auditor, score in zip((admin_user, alice), scores, strict=True):
            Audit.objects.create(item=item, auditor=auditor, score=score, served_at=now)
    return {"project": project, "judge": judge, "samples": samples, "audited": {samples[0].pk, samples[1].pk}}


def test_judge_vs_people_reads_only_the_audited_samples_judgements(
    audited: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[set[int]] = []

    def recording(*args: Any, **kwargs: Any) -> dict[int, dict[int, Judgement]]:
        found = latest_judgements(*args, **kwargs)
        read.append({sample_id for by_sample in found.values() for sample_id in by_sample})
        return found

    monkeypatch.setattr(people, "latest_judgements", recording)
    figures = people.judge_vs_people(audited["project"], audited["judge"])
    assert read == [audited["audited"]]  # not the ten judged samples
    expected = figures_from_every_judgement(audited["project"], audited["judge"])
    assert {key: figures[key] for key in expected} == expected
    assert figures["probability"] is True and figures["items"] == 2


def test_a_later_run_on_an_audited_sample_changes_the_figures_and_one_elsewhere_the_probability_note(
    audited: dict[str, Any], admin_user: Any
) -> None:
    project, judge, samples = audited["project"], audited["judge"], audited["samples"]
    client = login(admin_user)
    url = f"/api/projects/{project.slug}/judges/{judge.pk}/people/"
    before = client.get(url).json()
    later = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.DONE)
    Judgement.objects.create(run=later, sample=samples[1], status="ok", score=1)  # was 5 (the old run's)
    Judgement.objects.create(run=later, sample=samples[9], status="ok", score=3)  # p no longer the latest
    after = client.get(url).json()
    assert after["confusion"] != before["confusion"] and after["mean_residual"] != before["mean_residual"]
    expected = figures_from_every_judgement(project, judge)
    assert after["probability"] is False is expected["probability"]
    assert after["confusion"] == expected["confusion"] and after["mean_residual"] == expected["mean_residual"]
