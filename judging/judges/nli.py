"""NLI judges with sliding windows (DESIGN.md, "LLM judges and audit"): P(consistent) per (reference, hypothesis).

Only the reference is windowed (judging/windows.py); the hypothesis is whole
in every window, and a pair's p is the max over its windows: one window that
supports the hypothesis is enough. Windows of many pairs run through the model
together, sorted by length so a batch pads little; that is what makes a run
several times faster than one window at a time.

A pair whose hypothesis leaves no room for reference tokens gets an error,
never a number: ``score_pair_outcomes`` reports it per pair, ``score_pairs``
raises ValueError for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from judging.clients import ModelSettingError, NliModel
from judging.labels import setting_label
from judging.windows import reference_windows

# What a pair that does not fit a window is told to change (its error names the settings as the judges page does).
ROOM_ADVICE = (f"raise the judge's “{setting_label('nli_max_length')}” (up to what the model takes) or lower its "
               f"“{setting_label('nli_overlap')}”")


def overlap_problem(max_length: int, overlap: int) -> str:
    """Why a window overlap cannot work with this window length, or "".

    Every window carries the overlap, the special tokens and the whole output (the hypothesis), and what is left
    takes new source tokens. An overlap over half the window leaves too little for both on any real output: a run
    with 40 tokens and an overlap of 32 fails every sample. So the overlap may take at most half the window.
    """
    if overlap * 2 > max_length:
        return (f"{setting_label('nli_overlap')} {overlap} is more than half of {setting_label('nli_max_length')} "
                f"{max_length}: each window carries the overlap, the whole output and the special tokens, so too "
                f"little would be left for the output and new source text and every sample would fail. Make it at "
                f"most {max_length // 2}, or raise {setting_label('nli_max_length')}.")
    return ""


@dataclass(frozen=True)
class PairScore:
    """One pair's outcome: ``probability`` (max over ``windows`` windows, whose own p are ``window_probabilities``
    in the reference's order) or, when None, ``error`` says why."""

    probability: float | None
    error: str = ""
    windows: int = 0
    window_probabilities: tuple[float, ...] = ()


@dataclass(frozen=True)
class _Window:
    pair: int
    input_ids: list[int]
    token_types: list[int] | None


def score_pair_outcomes(
    model: NliModel, pairs: list[tuple[str, str]], *, max_length: int = 512, overlap: int = 32, batch_size: int = 32
) -> list[PairScore]:
    """Score (reference, hypothesis) pairs; a pair that cannot be windowed gets its error instead of a number.

    Raises ModelSettingError for settings that no pair could use (a window
    longer than the model takes, an overlap that leaves less than half of it, a
    batch size below 1, a negative overlap). A pair's error names the setting
    that would make room for it.
    """
    _check_settings(model, max_length=max_length, overlap=overlap, batch_size=batch_size)
    if not pairs:
        return []
    tokenizer = model.tokenizer
    references = list(dict.fromkeys(reference for reference, _ in pairs))  # a reference shared by pairs: once
    reference_ids = dict(zip(references, _token_ids(tokenizer, references), strict=True))
    hypothesis_ids = _token_ids(tokenizer, [hypothesis for _, hypothesis in pairs])

    windows: list[_Window] = []
    outcomes: list[PairScore | None] = [None] * len(pairs)
    counts = [0] * len(pairs)
    for index, ((reference, _), hypothesis) in enumerate(zip(pairs, hypothesis_ids, strict=True)):
        tokens = reference_ids[reference]
        try:
            ranges = reference_windows(
                len(tokens), len(hypothesis), max_length=max_length, overlap=overlap,
                specials=model.template.specials,
            )
        except ValueError as error:
            outcomes[index] = PairScore(None, f"{error}: {ROOM_ADVICE}.")
            continue
        counts[index] = len(ranges)
        for start, end in ranges:
            input_ids, token_types = model.template.build(tokens[start:end], hypothesis)
            windows.append(_Window(index, input_ids, token_types))

    per_window: list[list[float]] = [[] for _ in pairs]  # windows were made in the reference's order per pair
    for window, probability in zip(windows, _window_probabilities(model, windows, batch_size), strict=True):
        per_window[window.pair].append(probability)
    return [
        outcome if outcome is not None
        else PairScore(max(per_window[index], default=0.0), "", counts[index], tuple(per_window[index]))
        for index, outcome in enumerate(outcomes)
    ]


def score_pairs(
    model: NliModel, pairs: list[tuple[str, str]], *, max_length: int = 512, overlap: int = 32, batch_size: int = 32
) -> list[float]:
    """P(consistent) per (reference, hypothesis) pair, max over the pair's windows.

    Raises ValueError naming the first pair (0-based) that cannot be windowed;
    callers that want the other pairs scored anyway use ``score_pair_outcomes``.
    """
    outcomes = score_pair_outcomes(model, pairs, max_length=max_length, overlap=overlap, batch_size=batch_size)
    for index, outcome in enumerate(outcomes):
        if outcome.probability is None:
            raise ValueError(f"pair {index}: {outcome.error}")
    return [outcome.probability for outcome in outcomes if outcome.probability is not None]


def score_sentences(
    model: NliModel, reference: str, sentences: list[str], *, max_length: int = 512, overlap: int = 32,
    batch_size: int = 32,
) -> list[float | None]:
    """P(consistent) of each output sentence against the whole reference (the audit page shades sentences by it).

    A sentence too long for any window gets None (no number), not an error for the others.
    """
    outcomes = score_pair_outcomes(
        model, [(reference, sentence) for sentence in sentences], max_length=max_length, overlap=overlap,
        batch_size=batch_size,
    )
    return [outcome.probability for outcome in outcomes]


def _check_settings(model: NliModel, *, max_length: int, overlap: int, batch_size: int) -> None:
    if model.max_length is not None and max_length > model.max_length:
        raise ModelSettingError(
            f"{setting_label('nli_max_length')} {max_length} is more than the model at {model.path!r} takes "
            f"({model.max_length} tokens).",
            setting="nli_max_length",
        )
    if max_length <= model.template.specials:
        raise ModelSettingError(
            f"{setting_label('nli_max_length')} {max_length} leaves no room beside the model's "
            f"{model.template.specials} special tokens.",
            setting="nli_max_length",
        )
    if overlap < 0:
        raise ModelSettingError(f"{setting_label('nli_overlap')} cannot be negative (got {overlap}).",
                                setting="nli_overlap")
    problem = overlap_problem(max_length, overlap)
    if problem:
        raise ModelSettingError(problem, setting="nli_overlap")
    if batch_size < 1:
        raise ModelSettingError(f"nli_batch_size must be at least 1 (got {batch_size}).", setting="nli_batch_size")


def _token_ids(tokenizer: object, texts: list[str]) -> list[list[int]]:
    # No special tokens (the template adds them per window); verbose=False: long references are expected here.
    encoded = tokenizer(texts, add_special_tokens=False, verbose=False)  # type: ignore[operator]
    return [list(ids) for ids in encoded["input_ids"]]


def _window_probabilities(model: NliModel, windows: list[_Window], batch_size: int) -> list[float]:
    """P(consistent) of each window, in the order given; batches of similar length, so little padding."""
    if not windows:
        return []
    import torch

    tokenizer = model.tokenizer
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    pad_type = int(getattr(tokenizer, "pad_token_type_id", 0) or 0)
    order = sorted(range(len(windows)), key=lambda index: len(windows[index].input_ids))
    probabilities = [0.0] * len(windows)
    with torch.inference_mode():
        for first in range(0, len(order), batch_size):
            chunk = order[first:first + batch_size]
            width = max(len(windows[index].input_ids) for index in chunk)
            input_ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
            attention = torch.zeros((len(chunk), width), dtype=torch.long)
            token_types = torch.full((len(chunk), width), pad_type, dtype=torch.long)
            for row, index in enumerate(chunk):
                window = windows[index]
                length = len(window.input_ids)
                input_ids[row, :length] = torch.tensor(window.input_ids, dtype=torch.long)
                attention[row, :length] = 1
                if window.token_types is not None:
                    token_types[row, :length] = torch.tensor(window.token_types, dtype=torch.long)
            inputs = {"input_ids": input_ids.to(model.device), "attention_mask": attention.to(model.device)}
            if model.template.has_token_types:
                inputs["token_type_ids"] = token_types.to(model.device)
            logits = model.model(**inputs).logits.float()
            if model.num_labels == 1:
                consistent = torch.sigmoid(logits[:, 0])
            else:
                consistent = torch.softmax(logits, dim=-1)[:, model.consistent_index]
            for row, value in zip(chunk, consistent.cpu().tolist(), strict=True):
                probabilities[row] = float(value)
    return probabilities
