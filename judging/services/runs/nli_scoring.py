"""An NLI judge's execution: the pending targets scored NLI_CHUNK pairs at a time, their windows batched together,
each output sentence too for a run over samples; what a judgement keeps as its raw answer (nli_raw)."""

from __future__ import annotations

import json
import time
from typing import Any

from annotate.text import split_sentences
from judging.clients import ModelSettingError, load_nli_model
from judging.judges.nli import PairScore, score_pair_outcomes
from judging.models import Judgement, JudgeRun
from judging.services.runs.execute import Progress, RunFailed, stop_if_interrupted
from judging.services.runs.results import ERROR, OK, _ResultWriter
from judging.services.runs.targets import Target, _pending_chunks

NLI_CHUNK = 64  # pairs per scoring call: their windows are batched together


def execute_nli(run: JudgeRun, deadline: float | None, *, progress: Progress | None = None) -> bool:
    """Score the pending targets with an NLI judge; True when none is left, False when stopped at the deadline.

    A run over samples also scores each output sentence against the whole source (``sentence_scores``, one p per
    sentence: the audit page's shading, whichever run of the judge is the latest); a synthetic set's run does not.
    Each judgement keeps its windows' own p in ``raw`` (nli_raw): the model's answer, of which p is the max.
    """
    judge = run.judge
    try:
        model = load_nli_model(judge.nli_model_path, consistent_label=judge.nli_consistent_label)
    except ModelSettingError as error:
        raise RunFailed(str(error)) from None
    per_sentence = run.scope != JudgeRun.Scope.SYNTHETIC
    writer = _ResultWriter(run)
    for chunk in _pending_chunks(run, NLI_CHUNK):
        stop_if_interrupted(run, writer)
        if deadline is not None and time.monotonic() >= deadline:
            writer.flush()
            return False
        pairs = [(target.reference, target.hypothesis) for target in chunk]
        sentence_spans: list[list[list[int]]] = []
        if per_sentence:
            for target in chunk:
                spans = target.sentences or split_sentences(target.hypothesis)
                sentence_spans.append(spans)
                pairs.extend((target.reference, target.hypothesis[start:end]) for start, end in spans)
        started = time.perf_counter()
        try:
            outcomes = score_pair_outcomes(model, pairs, max_length=judge.nli_max_length, overlap=judge.nli_overlap,
                                           batch_size=judge.nli_batch_size)
        except ModelSettingError as error:
            raise RunFailed(str(error)) from None
        seconds = (time.perf_counter() - started) / len(chunk)
        sentence_outcomes = iter(outcomes[len(chunk):])
        for index, target in enumerate(chunk):
            sentence_scores = None
            sentence_windows = None
            if per_sentence:
                # One p per output sentence (None where a sentence fits no window), in the order of the sample's
                # sentences as the audit page cuts them (stored offsets, else the same splitter).
                scored = [next(sentence_outcomes) for _ in sentence_spans[index]]
                sentence_scores = [outcome.probability for outcome in scored]
                sentence_windows = sum(outcome.windows for outcome in scored)
            writer.add(_nli_judgement(run, target, outcomes[index], sentence_scores, sentence_windows, seconds))
        writer.flush_if_due()
        if progress is not None:
            progress(run)
    writer.flush()
    return True


def nli_raw(outcome: PairScore, sentence_windows: int | None) -> str:
    """What an NLI judgement keeps as its raw answer: the p of each window over the source, in order (p is their
    max), and how many windows its sentences took, as JSON: ``{"windows": [0.12, 0.83], "sentence_windows": 3}``."""
    raw: dict[str, Any] = {"windows": [round(p, 6) for p in outcome.window_probabilities]}
    if sentence_windows is not None:
        raw["sentence_windows"] = sentence_windows
    return json.dumps(raw)


def _nli_judgement(
    run: JudgeRun, target: Target, outcome: PairScore, sentence_scores: list[float | None] | None,
    sentence_windows: int | None, seconds: float,
) -> Judgement:
    if outcome.probability is None:
        # No number, and no per-sentence figures either (as an import requires of a failed judgement).
        return target.judgement(run, status=ERROR, error=outcome.error, latency_seconds=seconds)
    return target.judgement(run, status=OK, probability=outcome.probability, latency_seconds=seconds,
                            sentence_scores=sentence_scores, raw=nli_raw(outcome, sentence_windows))
