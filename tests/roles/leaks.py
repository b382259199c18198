"""What annotators must never see: the detectors, the judges, the other annotators' round-1 work, the reviewers' parts."""

from __future__ import annotations

import re
from typing import Any

from annotate.models import JudgeFlag, Sample, SpanAnnotation
from annotate.pairmath import spam
from judging.models import Judge, Judgement
from tests.roles.expectations import PAIRS, SPANS
from tests.roles.world import World


def _plain_run(text: str, least: int = 12) -> str | None:
    """The longest stretch of the text's own words that every renderer writes as it is, or None.

    Quoted passages are left out: a judge quotes the summary and the source, which the annotator reads.
    """
    runs = re.findall(r"[A-Za-z0-9 ,.;:()-]+", re.sub(r'"[^"]*"', '"', text))
    best = max((run.strip() for run in runs), key=len, default="")
    return best[:40] if len(best) >= least else None


def _offsets(start: int, end: int) -> re.Pattern[str]:
    """A span's offsets as JSON writes them (compact or spaced), on the API and in the pages' json_script."""
    return re.compile(rf'"start":\s*{start},\s*"end":\s*{end}\b')


def hidden_from_annotators(world: World, annotator: Any) -> dict[str, str | re.Pattern[str]]:
    """What no response the annotator may read holds: a description -> a text or a pattern."""
    spans_project, pairs_project = world.projects[SPANS], world.projects[PAIRS]
    hidden: dict[str, str | re.Pattern[str]] = {}
    for sample in Sample.objects.filter(project=spans_project):
        for key in sample.metadata:
            hidden[f"detector/metadata key {key!r}"] = key
        hidden[f"generator {sample.generator!r}"] = sample.generator
    assert {"hhem-2.1", "gpt_4o"} <= {key.split("'")[1] for key in hidden if key.startswith("detector")}
    for judge in Judge.objects.filter(project=spans_project):
        hidden[f"judge name {judge.name!r}"] = judge.name
    for judgement in Judgement.objects.filter(run__project=spans_project).exclude(reasoning=""):
        snippet = _plain_run(judgement.reasoning, least=20)
        if snippet:
            hidden[f"reasoning of judgement {judgement.pk}"] = snippet
    hidden["judge score control"] = 'data-role="judge-score"'
    hidden["judge reasoning block"] = 'data-role="judge-reasoning"'
    mine = set(SpanAnnotation.objects.filter(annotator=annotator, round=1).values_list("start", "end"))
    others = SpanAnnotation.objects.filter(sample=world.sample, round=1).exclude(annotator=annotator)
    assert others.exists(), "the sample has no other annotator's round-1 span to look for"
    for span in others:
        if span.note and (snippet := _plain_run(span.note, least=8)):
            hidden[f"{span.annotator.username}'s round-1 note {span.pk}"] = snippet
        if (span.start, span.end) not in mine:
            hidden[f"{span.annotator.username}'s round-1 offsets {span.start}-{span.end}"] = _offsets(span.start, span.end)
        hidden[f"{span.annotator.username}'s name"] = re.compile(rf"\b{re.escape(span.annotator.username)}\b")
    for flag in JudgeFlag.objects.filter(project=pairs_project).select_related("judge"):
        hidden[f"spammer flag rule name {flag.rule}"] = flag.get_rule_display()
        hidden[f"spammer flag figures {flag.pk}"] = spam.explain(flag.rule, flag.figures)
        hidden[f"flagged judge {flag.judge.username}"] = re.compile(rf"\b{re.escape(flag.judge.username)}\b")
    # Everyone's answers on pair items: reviewers' fields, never in an annotator's JSON.
    for key in ("votes", "consensus", "items_by_state", "funnel"):
        hidden[f"pair reviewers' field {key!r}"] = f'"{key}"'
    # The project pages' parts for other roles (templates/annotate/project.html, pairs/project.html).
    for marker in ('data-role="figures-links"', 'data-role="judging-links"', 'data-role="browse-samples"',
                   "<h2>Export the labeled dataset</h2>", "<h2>Rounds and agreement</h2>"):
        hidden[f"reviewers' part {marker}"] = marker
    return hidden


def leaks_in(body: str, hidden: dict[str, str | re.Pattern[str]]) -> list[str]:
    found = []
    for what, needle in hidden.items():
        if isinstance(needle, str):
            if needle in body:
                found.append(what)
        elif needle.search(body):
            found.append(what)
    return found
