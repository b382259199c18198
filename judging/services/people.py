"""A judge against the auditors: the figures of judging.people over the project's answered audits."""

from __future__ import annotations

from typing import Any

from django.db.models import Exists, OuterRef, Q

from annotate.models import Project
from judging.models import Audit, Judge, Judgement
from judging.people import AuditRating, people_figures
from judging.services.judges import judging_settings
from judging.services.runs import latest_judgements
from judging.services.triage import is_flagged


def judge_vs_people(project: Project, judge: Judge) -> dict[str, Any]:
    """The judge's latest judgement of each audited sample beside every answered audit of it.

    Keys: ``items`` (audited items that have a score from the judge),
    ``alpha_{ordinal,interval}_{with_judge,auditors}`` (number or None, the
    reason in ``reasons`` when None), ``confusion`` (rows: judge level 1..5,
    columns: auditor score 1..5, one count per (item, auditor)),
    ``mean_residual`` and ``mean_absolute_residual`` (auditor - judge),
    ``flags_confirmed`` (share of the judge's flagged audited items whose
    auditors' median score is <= the project's LLM flag threshold), and
    counts that explain them. Items the judge failed on or never judged are
    left out of every figure that involves the judge and counted in
    ``items_without_judge_score``; alpha among the auditors alone is the
    people's own agreement, over every answered audit whatever the judge did.
    """
    settings = judging_settings(project)
    answered_audits = Audit.objects.filter(item__project=project, score__isnull=False)
    # Only the audited samples' judgements are read: every figure is over audited items (a flag counts once
    # audited), so the judge's other judgements, usually nearly all of them, stay in the database.
    judgements = latest_judgements(project, judge, samples=answered_audits.values("item__sample_id")).get(judge.pk, {})
    answered = answered_audits.order_by("item_id", "auditor_id").values_list("item__sample_id", "auditor_id", "score")
    ratings: list[AuditRating] = []
    without_judge: set[int] = set()
    for sample_id, auditor_id, score in answered:
        judgement = judgements.get(sample_id)
        figure = judgement.display_score if judgement is not None else None
        if figure is None:
            without_judge.add(sample_id)
        ratings.append(AuditRating(item=sample_id, auditor=auditor_id, auditor_score=score, judge_score=figure))
    flagged = {sample_id for sample_id, judgement in judgements.items() if is_flagged(judgement, settings)}
    figures = people_figures(ratings, flagged=flagged, flag_at_most=settings.llm_flag_at_most)
    return {
        **figures,
        "judge": {"id": judge.pk, "name": judge.name, "kind": judge.kind, "mode": judge.mode},
        # An NLI (or imported) judge's figure is 1 + 4p: the page says how it was rounded to a level.
        "probability": judge.kind == Judge.Kind.NLI or _latest_has_probability(project, judge),
        "items_without_judge_score": len(without_judge),
        "llm_flag_at_most": settings.llm_flag_at_most,
        "nli_flag_below": settings.nli_flag_below,
    }


def _latest_has_probability(project: Project, judge: Judge) -> bool:
    """Whether the judge's latest judgement of any sample, audited or not, holds a probability (an imported judge
    may give p): latest_judgements' rule (the most recent run by creation time, then id), asked in the database."""
    mine = Judgement.objects.filter(run__project=project, run__judge=judge, sample__isnull=False)
    later = mine.filter(sample_id=OuterRef("sample_id")).filter(
        Q(run__created_at__gt=OuterRef("run__created_at"))
        | Q(run__created_at=OuterRef("run__created_at"), run_id__gt=OuterRef("run_id"))
    )
    return mine.filter(probability__isnull=False).exclude(Exists(later)).exists()
