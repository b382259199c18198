"""The audit queue: flagged outputs served to auditors one at a time, their verdicts, and what the audit page
and the API show of an item (the texts, each judge's answer, the quoted passages, the first-pass shading).

Serving. An auditor gets the next item of the project that they have not audited and that has fewer than
``audits_per_item`` audits answered or being served (an Audit row is made when the item is served), worst
first: the flagging judgement's figure ascending (a score, or 1 + 4p for an NLI judge; items added without
a flag last), then by id. An auditor holds one unanswered serve at a time: asking again gives the same item.
A serve holds its slot for SERVE_MINUTES: after that, another auditor may take the slot (the stale serve is
released then); until someone does, the auditor who walked away still has the item.

Answering. A score 1-5, or ``agreed`` (the score of the judge's answer the auditor was shown); an item is
answered once (a second answer to it is refused). The time per item is the server's: answered_at - served_at,
both read from ``now()``, the one clock tests move (``monkeypatch.setattr(audits, "now", ...)``).

Changing. An auditor may change their own saved verdict (the page's ``u``; the API's PUT /api/audits/<id>/), never
another auditor's. A change keeps the first answer's ``answered_at`` and ``seconds`` (the time it took to read the
item and decide, which the figures use) and records when it was made in ``changed_at``; ``blind_score``, the score
given before the reveal, is never changed, and ``blind`` is again whether the final score is that one.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Count, ExpressionWrapper, F, FloatField, OuterRef, Q, Subquery, Value
from django.db.models.functions import Cast, Coalesce
from django.utils import timezone

from annotate.access import role_in
from annotate.models import Membership, Project, Sample
from annotate.text import split_sentences
from judging.models import Audit, AuditItem, Judge, Judgement, JudgingSettings
from judging.models.judges import SCORE_LABELS
from judging.quotes import Mark, find_quotes, reasoning_pieces, text_parts

AUDITOR_ROLES = (Membership.Role.ADMIN, Membership.Role.AUDITOR)
MAX_NOTE = 5000
# An unanswered serve keeps its slot this long (as a pairs serve does); then the slot may go to another auditor.
SERVE_MINUTES = 30
SHADES = 5  # first-pass shading steps, shade-0 (consistent) .. shade-4 (least consistent)


def now() -> datetime:
    """The server clock for serving and answering (tests replace it; see the module docstring)."""
    return timezone.now()


class AuditError(Exception):
    """An audit refused; nothing was changed. ``status`` is the HTTP answer (400, 403, 404 or 409), ``code``
    names the refusal for API clients, ``field`` the input at fault (400)."""

    def __init__(self, message: str, *, status: int = 409, code: str = "", field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field


def judging_settings_of(project: Project) -> JudgingSettings:
    """The project's triage settings, or their defaults when none were saved (read only: a page view writes nothing)."""
    return JudgingSettings.objects.filter(project=project).first() or JudgingSettings(project=project)


def _check_auditor(project: Project, auditor: Any) -> None:
    if role_in(auditor, project) not in AUDITOR_ROLES:
        raise AuditError("Only the project's auditors and admins audit judge scores", status=403, code="not_an_auditor")


# --------------------------------------------------------------------------- which judgements an item shows


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


# --------------------------------------------------------------------------- serving


def _holding_a_slot(moment: datetime) -> Q:
    """Audits that count against an item's audits_per_item: answered, or served within SERVE_MINUTES."""
    return Q(answered_at__isnull=False) | Q(served_at__gte=moment - timedelta(minutes=SERVE_MINUTES))


def _open_items(project: Project, auditor: Any, settings: JudgingSettings) -> Any:
    """Items the auditor may be served now, worst first."""
    taken = (
        Audit.objects.filter(_holding_a_slot(now()), item=OuterRef("pk"))
        .order_by().values("item").annotate(n=Count("pk")).values("n")[:1]
    )
    figure = Coalesce(
        Cast("flagged_by__score", FloatField()),
        ExpressionWrapper(Value(1.0) + Value(4.0) * F("flagged_by__probability"), output_field=FloatField()),
    )
    return (
        AuditItem.objects.filter(project=project)
        .exclude(audits__auditor=auditor)
        .annotate(taken=Coalesce(Subquery(taken), 0), flag_figure=figure)
        .filter(taken__lt=settings.audits_per_item)
        .order_by(F("flag_figure").asc(nulls_last=True), "id")
    )


def _held(project: Project, auditor: Any) -> Audit | None:
    return (
        Audit.objects.filter(item__project=project, auditor=auditor, answered_at__isnull=True)
        .select_related("item__sample__passage", "item__flagged_by", "judgement")
        .order_by("served_at", "id")
        .first()
    )


def serve_next_audit(project: Project, auditor: Any) -> Audit | None:
    """The auditor's item: the one they hold unanswered, else the worst open one (served now), else None."""
    _check_auditor(project, auditor)
    settings = judging_settings_of(project)
    with transaction.atomic():
        # One serve at a time per auditor, even from two tabs: their user row is the lock.
        list(get_user_model().objects.select_for_update().filter(pk=auditor.pk).values_list("pk"))
        held = _held(project, auditor)
        if held is not None:
            # Show the current explanation (an explainer may have answered since): agree takes what is shown.
            current = shown_judgement(held.item, latest_sample_judgements(held.item.sample), settings)
            if current is not None and current.pk != held.judgement_id:
                held.judgement = current
                held.save(update_fields=["judgement"])
            return held
        for candidate in _open_items(project, auditor, settings)[:50]:
            # Another auditor may be taking the last slot: lock the item, then count again.
            # of=("self",): PostgreSQL locks no row on the nullable side of the flagged_by join.
            item = (
                AuditItem.objects.select_for_update(of=("self",))
                .select_related("sample__passage", "flagged_by")
                .get(pk=candidate.pk)
            )
            moment = now()
            if item.audits.filter(_holding_a_slot(moment)).count() >= settings.audits_per_item:
                continue
            # Stale serves on this item give their slots up now (their auditors walked away).
            item.audits.filter(answered_at__isnull=True).exclude(_holding_a_slot(moment)).delete()
            judgement = shown_judgement(item, latest_sample_judgements(item.sample), settings)
            try:
                with transaction.atomic():
                    return Audit.objects.create(item=item, auditor=auditor, judgement=judgement, served_at=moment)
            except IntegrityError:  # served to this auditor by a request that won the race
                continue
    return None


# --------------------------------------------------------------------------- answering


def _clean_score(score: Any) -> int | None:
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
        raise AuditError(f"score must be a whole number from 1 to 5, not {score!r}", status=400, field="score")
    return score


def submit_audit(
    project: Project,
    auditor: Any,
    item_id: int,
    *,
    score: int | None,
    agreed: bool,
    reasoning_wrong: bool,
    note: str,
    blind_score: int | None = None,
) -> Audit:
    """Record the auditor's verdict on the item served to them: their score, or the shown judge's when they agree.

    ``blind_score`` is the score they gave while the judge's answer was hidden (blind mode), if any: it is kept
    as it is, and the audit is ``blind`` when the final score is that one. Refusals (AuditError, nothing saved):
    400 bad input, 403 not an auditor, 404 no such item in the project, 409 not served to you, answered already
    (change the saved verdict with :func:`change_audit`), or nothing to agree with (the shown answer has no 1-5
    score).
    """
    _check_auditor(project, auditor)
    score, note = _clean_verdict(score, agreed, note)
    with transaction.atomic():
        item = AuditItem.objects.filter(project=project, pk=item_id).first()
        if item is None:
            raise AuditError("No such audit item in this project", status=404, code="no_such_item")
        audit = (
            Audit.objects.select_for_update(of=("self",))
            .select_related("judgement__run__judge")
            .filter(item=item, auditor=auditor)
            .first()
        )
        if audit is None:
            raise AuditError(
                "this item is not served to you (or your serve expired and went to another auditor): "
                "ask for your next item",
                code="not_served",
            )
        if audit.answered_at is not None:
            raise AuditError(
                f"you audited this item already (score {audit.score}); an item is answered once: change that verdict "
                f"as audit {audit.pk} instead (u on the audit page, PUT /api/audits/{audit.pk}/)",
                code="already_audited",
            )
        score = _final_score(audit, score, agreed)
        moment = now()
        audit.score = score
        audit.agreed = bool(agreed)
        audit.reasoning_wrong = bool(reasoning_wrong)
        audit.note = note.strip()
        audit.blind_score = blind_score
        audit.blind = blind_score is not None and blind_score == score
        audit.answered_at = moment
        audit.seconds = max(0.0, (moment - audit.served_at).total_seconds())
        audit.save(
            update_fields=[
                "score", "agreed", "reasoning_wrong", "note", "blind_score", "blind", "answered_at", "seconds",
            ]
        )
    return audit


def _final_score(audit: Audit, score: int | None, agreed: bool) -> int:
    """The verdict's score: the auditor's own, or when they agree the score of the judge's answer they were shown
    (``score`` may then be left out, or must equal it). Refused (AuditError) when agreeing has nothing to take."""
    if not agreed:
        if score is None:
            raise AuditError("give a score from 1 to 5, or agree with the judge's score", status=400, field="score")
        return score
    shown = audit.judgement
    if shown is None:
        raise AuditError("no judge's score was shown for this item: give your own score (1-5)", code="nothing_to_agree")
    if shown.score is None:
        what = (
            f"an NLI probability (p = {shown.probability:.3f}), not a 1-5 score"
            if shown.probability is not None
            else f"no score ({shown.get_status_display().lower()})"
        )
        raise AuditError(
            f"the answer of judge {shown.run.judge.name} has {what}: give your own score (1-5)",
            code="nothing_to_agree",
        )
    if score is not None and score != shown.score:
        raise AuditError(
            f"score {score} differs from the judge's score {shown.score} you agreed with: send one or the other",
            status=400,
            field="score",
        )
    return shown.score


def _clean_verdict(score: Any, agreed: bool, note: Any) -> tuple[int | None, str]:
    """The score and note of a verdict, checked before anything is looked up (400 on bad input)."""
    score = _clean_score(score)
    note = note if isinstance(note, str) else ""
    if len(note) > MAX_NOTE:
        raise AuditError(f"note is {len(note)} characters long; at most {MAX_NOTE} are kept", status=400, field="note")
    if not agreed and score is None:
        raise AuditError("give a score from 1 to 5, or agree with the judge's score", status=400, field="score")
    return score, note


def own_answered_audit(project: Project, auditor: Any, audit_id: int, *, lock: bool = False) -> Audit:
    """The auditor's own answered audit in the project, to show or change. Refusals (AuditError): 403 not an
    auditor, 404 no such audit in the project, 403 another auditor's verdict, 409 no verdict saved yet."""
    _check_auditor(project, auditor)
    found = Audit.objects.filter(item__project=project, pk=audit_id).select_related(
        "item__sample__passage", "item__flagged_by", "judgement__run__judge"
    )
    if lock:
        found = found.select_for_update(of=("self",))
    audit = found.first()
    if audit is None:
        raise AuditError(f"No audit {audit_id} in this project", status=404, code="no_such_audit")
    if audit.auditor_id != auditor.pk:
        raise AuditError(
            f"audit {audit_id} is another auditor's verdict: you may change only your own", status=403,
            code="not_your_audit",
        )
    if audit.answered_at is None:
        raise AuditError(
            "this audit holds no verdict yet: answer its item first (only a saved verdict can be changed)",
            code="not_answered",
        )
    return audit


def change_audit(
    project: Project,
    auditor: Any,
    audit_id: int,
    *,
    score: int | None,
    agreed: bool,
    reasoning_wrong: bool,
    note: str,
) -> Audit:
    """Change the auditor's own saved verdict: score (or agreed), reasoning marked wrong, note.

    The first answer's ``answered_at`` and ``seconds`` stay (the time to decide, not to correct); ``changed_at``
    says when the change was made, and ``blind`` is again whether the final score is the one given blind
    (``blind_score``, never changed). A verdict sent back as it is saved changes nothing, ``changed_at``
    included. Refusals (AuditError, nothing saved): those of :func:`own_answered_audit`, 400 bad input, 409
    nothing to agree with.
    """
    _check_auditor(project, auditor)
    score, note = _clean_verdict(score, agreed, note)
    with transaction.atomic():
        audit = own_answered_audit(project, auditor, audit_id, lock=True)
        score = _final_score(audit, score, agreed)
        verdict = {"score": score, "agreed": bool(agreed), "reasoning_wrong": bool(reasoning_wrong), "note": note.strip()}
        if all(getattr(audit, name) == value for name, value in verdict.items()):
            return audit
        for name, value in verdict.items():
            setattr(audit, name, value)
        audit.blind = audit.blind_score is not None and audit.blind_score == score
        audit.changed_at = now()
        audit.save(update_fields=[*verdict, "blind", "changed_at"])
    return audit


def audit_progress(project: Project, auditor: Any) -> dict[str, int]:
    """``answered``: the auditor's verdicts in the project; ``left``: items still open to them, the one they
    hold included; ``items``: the queue's size; ``complete``: items with all their audits answered;
    ``audits_per_item``: how many auditors answer each item."""
    settings = judging_settings_of(project)
    mine = Audit.objects.filter(item__project=project, auditor=auditor)
    answered = mine.filter(answered_at__isnull=False).count()
    holding = mine.filter(answered_at__isnull=True).count()
    items = AuditItem.objects.filter(project=project)
    complete = (
        items.annotate(done=Count("audits", filter=Q(audits__answered_at__isnull=False)))
        .filter(done__gte=settings.audits_per_item)
        .count()
    )
    return {
        "answered": answered,
        "left": _open_items(project, auditor, settings).count() + holding,
        "items": items.count(),
        "complete": complete,
        "audits_per_item": settings.audits_per_item,
    }
