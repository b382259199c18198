"""What the audit page and the API show of an item: which judgement of each judge it shows, the judges'
panels with their reasoning and the quoted passages, and the output's first-pass shading."""


from __future__ import annotations

from typing import Any

from annotate.models import Sample
from annotate.text import split_sentences
from judging.models import AuditItem, Judge, Judgement, JudgingSettings
from judging.models.judges import SCORE_LABELS
from judging.quotes import Mark, find_quotes, reasoning_pieces, text_parts
from judging.services.audits.auditors import judging_settings_of

SHADES = 5  # first-pass shading steps, shade-0 (consistent) .. shade-4 (least consistent)


def latest_sample_judgements(sample: Sample) -> dict[int, Judgement]:
    """Each judge's most recent judgement of the sample ({judge_id: judgement}): from the latest run (by
    creation, then id) that judged it, whatever its status — the same rule as
    judging.services.runs.latest_judgements, asked for one sample instead of the whole project."""
    latest: dict[int, Judgement] = {}
    found = (
        Judgement.objects.filter(sample=sample, run__project_id=sample.project_id)
        .select_related("run__judge")
        .order_by("-run__created_at", "-run_id")
    )
    for judgement in found:
        latest.setdefault(judgement.run.judge_id, judgement)
    return latest


def shown_judgement(
    item: AuditItem, latest: dict[int, Judgement], settings: JudgingSettings | None = None
) -> Judgement | None:
    """The judge's answer the auditor agrees with or corrects: the explainer's, else the flagging first pass's,
    else the first pass judge's latest — the first of those that was scored (status ok: a score, or an NLI p);
    when none was, the first that exists."""
    settings = settings or judging_settings_of(item.project)
    candidates = [
        latest.get(settings.explainer_id) if settings.explainer_id else None,
        item.flagged_by,
        latest.get(settings.first_pass_id) if settings.first_pass_id else None,
    ]
    present = [judgement for judgement in candidates if judgement is not None]
    with_score = [judgement for judgement in present if judgement.status == Judgement.Status.OK]
    return (with_score or present or [None])[0]


def score_text(judgement: Judgement) -> str:
    """How the page prints a judgement's figure: "4 · very faithful", "p = 0.123 · 1 + 4p = 1.49", or its failure."""
    if judgement.score is not None:
        return f"{judgement.score} · {SCORE_LABELS[judgement.score]}"
    if judgement.probability is not None:
        return f"p = {judgement.probability:.3f} · 1 + 4p = {1 + 4 * judgement.probability:.2f}"
    return judgement.get_status_display()


def judge_panels(item: AuditItem, *, latest: dict[int, Judgement] | None = None) -> list[dict[str, Any]]:
    """Each judge's latest judgement of the item's sample: the shown one first, then the explainer, the first
    pass and the others by name. Scores carry their labels, NLI judges p and 1 + 4p, failures their status and
    (parse errors) the raw answer; ``quotes`` are the reasoning's quoted passages found in the texts."""
    settings = judging_settings_of(item.project)
    latest = latest_sample_judgements(item.sample) if latest is None else latest
    shown = shown_judgement(item, latest, settings)
    source, output = item.sample.passage.text, item.sample.summary

    def rank(judgement: Judgement) -> tuple[int, str]:
        judge_id = judgement.run.judge_id
        if shown is not None and judgement.pk == shown.pk:
            return (0, "")
        if judge_id == settings.explainer_id:
            return (1, "")
        if judge_id == settings.first_pass_id:
            return (2, "")
        return (3, judgement.run.judge.name.casefold())

    panels = []
    for judgement in sorted(latest.values(), key=rank):
        judge: Judge = judgement.run.judge
        quotes = find_quotes(judgement.reasoning, source, output) if judgement.reasoning else []
        panels.append({
            "judge_id": judge.pk,
            "judge": judge.name,
            "kind": judge.kind,
            "kind_label": judge.get_kind_display(),
            "mode": judge.mode,
            "model": judge.model,
            "judgement_id": judgement.pk,
            "run_id": judgement.run_id,
            "status": judgement.status,
            "status_label": judgement.get_status_display(),
            "score": judgement.score,
            "probability": judgement.probability,
            "display_score": judgement.display_score,
            "label": SCORE_LABELS.get(judgement.score) if judgement.score is not None else None,
            "score_text": score_text(judgement),
            "reasoning": judgement.reasoning,
            # The raw answer is what an auditor needs to see why a parse failed; an endpoint error has none.
            "raw": judgement.raw if judgement.status == Judgement.Status.PARSE_ERROR else "",
            "error": judgement.error,
            "quotes": quotes,
            "shown": shown is not None and judgement.pk == shown.pk,
            "explainer": judge.pk == settings.explainer_id,
            "first_pass": judge.pk == settings.first_pass_id,
        })
    return panels


def output_sentences(sample: Sample) -> list[list[int]]:
    """The output's sentences in code points: stored by the embedding job, else split as it splits them."""
    return sample.sentences if sample.sentences is not None else split_sentences(sample.summary)


def sentence_shading(item: AuditItem, latest: dict[int, Judgement] | None = None) -> dict[str, Any] | None:
    """The first-pass judgement's per-sentence figures as shades of the output's sentences, or None.

    Taken from the flagging judgement, else the first pass judge's latest, when it has ``sentence_scores``
    (one figure per output sentence, null where none, on the judgement's own scale: p in [0, 1] beside a
    probability, 1-5 beside a score). Each figure is read on 0..1 as p or (score - 1) / 4, and ``shade`` is
    0 (consistent) .. SHADES - 1. A list whose length differs from the output's sentences is not shown: which
    figure belongs to which sentence would be a guess.
    """
    settings = judging_settings_of(item.project)
    if latest is None:
        latest = latest_sample_judgements(item.sample)
    candidates = [item.flagged_by, latest.get(settings.first_pass_id) if settings.first_pass_id else None]
    source = next((j for j in candidates if j is not None and isinstance(j.sentence_scores, list)), None)
    if source is None:
        return None
    sentences = output_sentences(item.sample)
    figures = source.sentence_scores
    judge = source.run.judge
    if len(figures) != len(sentences):
        return {"judge": judge.name, "sentences": {}, "mismatch": (len(figures), len(sentences))}
    # The figures are on the judgement's own scale: p beside a p, scores beside a score (imports say which).
    if source.probability is not None or source.score is not None:
        is_probability = source.probability is not None
    else:
        is_probability = judge.kind == Judge.Kind.NLI
    shaded: dict[int, dict[str, Any]] = {}
    for index, figure in enumerate(figures):
        if isinstance(figure, bool) or not isinstance(figure, int | float):
            continue
        consistency = float(figure) if is_probability else (float(figure) - 1) / 4
        consistency = min(1.0, max(0.0, consistency))
        shaded[index] = {
            "figure": figure,
            "text": f"p = {figure:.3f}" if is_probability else f"score {figure:g}",
            "shade": min(SHADES - 1, int((1 - consistency) * SHADES)),
        }
    return {"judge": judge.name, "sentences": shaded, "mismatch": None}


def item_view(item: AuditItem, *, reveal: bool = True) -> dict[str, Any]:
    """What the audit page renders of an item: the two texts cut into sentences and quoted passages, the judge
    panels, the shading. With ``reveal`` False (blind mode, before the auditor's own score) nothing of the
    judges' answers is included: no panel, quote or shading (the page leaves out the flag reason too).

    Each panel has its ``number`` (its place on the page, 0 the top one) and ``quotes_found`` (its quotes found
    in the texts); each text piece ``judges``, the numbers of the panels quoting it, and ``quoted_by``, their
    names: the page highlights one judge's quotes at a time, so a highlight always says whose it is."""
    sample = item.sample
    source, output = sample.passage.text, sample.summary
    sentences = output_sentences(sample)
    view: dict[str, Any] = {"item": item, "sample": sample, "revealed": reveal, "panels": [], "shading": None}
    source_marks: list[Mark] = []
    output_marks: list[Mark] = []
    quoted_by: dict[str, int] = {}  # quote id -> the number of the panel whose reasoning holds it
    if reveal:
        latest = latest_sample_judgements(sample)
        panels = judge_panels(item, latest=latest)
        for number, panel in enumerate(panels):
            panel["number"] = number
            for quote in panel["quotes"]:
                quote["id"] = f"{number}-{quote['index']}"
                quoted_by[quote["id"]] = number
                if quote["where"] is not None:
                    marks = source_marks if quote["where"] == "source" else output_marks
                    marks.append(Mark(quote["start"], quote["end"], quote["id"]))
            panel["quotes_found"] = sum(1 for quote in panel["quotes"] if quote["where"] is not None)
            panel["pieces"] = reasoning_pieces(panel["reasoning"], panel["quotes"])
            for piece in panel["pieces"]:
                piece["id"] = f"{number}-{piece['quote']}" if piece["quote"] is not None else ""
        view["panels"] = panels
        view["shading"] = sentence_shading(item, latest)
    shades = (view["shading"] or {}).get("sentences", {})
    view["source_parts"] = text_parts(source, None, source_marks)
    view["output_parts"] = text_parts(output, sentences, output_marks)
    for part in view["output_parts"]:
        part["shade"] = shades.get(part["sentence"]) if part["sentence"] is not None else None
    names = [panel["judge"] for panel in view["panels"]]
    for part in view["source_parts"] + view["output_parts"]:
        for piece in part["pieces"]:
            piece["judges"] = sorted({quoted_by[mark] for mark in piece["marks"]})
            piece["quoted_by"] = [names[number] for number in piece["judges"]]
    return view

