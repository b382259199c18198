"""MASK -> REPLACE -> RANK on one text: ``perturb_text``.

MASK chooses word units once per text (seeded ``random.Random``); REPLACE
fills them in ``candidates`` different ways (seeded ``torch.Generator``); RANK
keeps the candidate the causal LM finds least perplexing. The result says
which words were replaced where, in both texts (code points, end-exclusive),
and keeps every candidate's perplexity.

Texts longer than the masked LM's window (512 pieces for BERT) are perturbed
within the window only: units past it stay as they are.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from annotate.perturbation.fill import FillRequest, PieceVocabulary, fill_candidates
from annotate.perturbation.models import PerturbationModels
from annotate.perturbation.rank import perplexities
from annotate.perturbation.units import WordUnit, choose_masked, word_units


@dataclass(frozen=True)
class PerturbationParams:
    context_sentences: int = 2
    mask_ratio: float = 0.6
    top_k: int = 10
    temperature: float = 1.0
    candidates: int = 20

    def check(self) -> PerturbationParams:
        problems = []
        if self.context_sentences < 0:
            problems.append(f"context_sentences: {self.context_sentences} must be 0 or more")
        if not 0 < self.mask_ratio <= 1:
            problems.append(f"mask_ratio: {self.mask_ratio} must be above 0 and at most 1")
        if self.top_k < 1:
            problems.append(f"top_k: {self.top_k} must be 1 or more")
        if not self.temperature > 0:
            problems.append(f"temperature: {self.temperature} must be above 0")
        if self.candidates < 1:
            problems.append(f"candidates: {self.candidates} must be 1 or more")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ReplacedSpan:
    """One replaced unit: where it was in the original, where its replacement is in the perturbed text."""

    original_start: int
    original_end: int
    original_words: str
    perturbed_start: int
    perturbed_end: int
    perturbed_words: str
    entity: str  # the unit's entity label ("DATE", "NAME", ...), "" for a plain word


@dataclass(frozen=True)
class PerturbationResult:
    original: str
    text: str  # the kept candidate; the original itself when nothing could be masked
    spans: list[ReplacedSpan]
    perplexities: list[float]  # every candidate's, in candidate order
    chosen: int | None  # index of the kept candidate
    seed: int
    params: dict[str, Any]
    maskable_units: int
    candidates: list[str] = field(default_factory=list)

    @property
    def perplexity(self) -> float | None:
        return None if self.chosen is None else self.perplexities[self.chosen]


@dataclass(frozen=True)
class MaskedPiece:
    start: int  # code points in the original text
    end: int
    original_id: int


@dataclass(frozen=True)
class MaskedUnit:
    unit: WordUnit
    pieces: list[tuple[MaskedPiece, int]]  # each with its step (index among all masked pieces)


def _cased(surface: str, original: str) -> str:
    """A lower-casing model's piece written with the original piece's capitals."""
    if len(original) > 1 and original.isupper():
        return surface.upper()
    if original[:1].isupper():
        return surface[:1].upper() + surface[1:]
    return surface


def _unit_pieces(text: str, units: list[WordUnit], models: PerturbationModels) -> tuple[list[int], dict]:
    """The masked LM's input ids, and each maskable unit's fillable pieces as (index into ids, piece)."""
    masked = models.masked
    encoding = masked.tokenizer(
        text, return_offsets_mapping=True, return_special_tokens_mask=True, truncation=True,
        max_length=masked.max_length,
    )
    ids = list(encoding["input_ids"])
    offsets = [tuple(pair) for pair in encoding["offset_mapping"]]
    real = [index for index, special in enumerate(encoding["special_tokens_mask"]) if not special]
    covered_until = offsets[real[-1]][1] if real else 0
    pieces: dict[WordUnit, list[tuple[int, MaskedPiece]]] = {}
    for unit in units:
        if not unit.maskable or unit.end > covered_until:
            continue
        inside = [index for index in real if offsets[index][0] < unit.end and offsets[index][1] > unit.start]
        # A piece reaching outside the unit (tokenisers disagree on "don't") would replace a neighbour too.
        if not inside or any(offsets[i][0] < unit.start or offsets[i][1] > unit.end for i in inside):
            continue
        fillable = [
            (index, MaskedPiece(offsets[index][0], offsets[index][1], ids[index]))
            for index in inside
            if any(ch.isalnum() for ch in text[offsets[index][0] : offsets[index][1]])
        ]
        if fillable:
            pieces[unit] = fillable
    return ids, pieces


def _assemble(text: str, chosen: list[MaskedUnit], new_ids: list[int], vocabulary: PieceVocabulary
              ) -> tuple[str, list[ReplacedSpan]]:
    """The candidate's text and spans; everything outside the replaced pieces keeps its characters."""
    parts: list[str] = []
    length = 0
    cursor = 0
    spans = []

    def put(piece: str) -> None:
        nonlocal length
        parts.append(piece)
        length += len(piece)

    for masked_unit in chosen:
        unit = masked_unit.unit
        put(text[cursor : unit.start])
        start = length
        inner = unit.start
        for piece, step in masked_unit.pieces:
            put(text[inner : piece.start])
            surface = vocabulary.surfaces[new_ids[step]]
            put(_cased(surface, text[piece.start : piece.end]) if vocabulary.lowercases else surface)
            inner = piece.end
        put(text[inner : unit.end])
        cursor = unit.end
        spans.append(ReplacedSpan(unit.start, unit.end, unit.text, start, length, "", unit.entity))
    put(text[cursor:])
    perturbed = "".join(parts)
    return perturbed, [
        ReplacedSpan(span.original_start, span.original_end, span.original_words, span.perturbed_start,
                     span.perturbed_end, perturbed[span.perturbed_start : span.perturbed_end], span.entity)
        for span in spans
    ]


@dataclass(frozen=True)
class MaskPlan:
    """MASK's outcome for one text: the units that may be masked, the ones chosen, and the fill's input."""

    maskable: list[WordUnit]
    masked: list[MaskedUnit]
    request: FillRequest | None  # None when nothing could be masked


def mask_text(text: str, models: PerturbationModels, params: PerturbationParams, seed: int) -> MaskPlan:
    """Choose the units to replace (seeded) and line up their word pieces for the masked LM."""
    units = word_units(text, models.nlp, params.context_sentences)
    input_ids, fillable = _unit_pieces(text, units, models)
    maskable = [unit for unit in units if unit in fillable]
    chosen_units = choose_masked(maskable, params.mask_ratio, random.Random(seed))
    if not chosen_units:
        return MaskPlan(maskable, [], None)
    masked_units: list[MaskedUnit] = []
    positions, original_ids, kinds = [], [], []
    for unit in chosen_units:
        pieces = []
        for index, piece in fillable[unit]:
            pieces.append((piece, len(positions)))
            positions.append(index)
            original_ids.append(piece.original_id)
            kinds.append(models.masked.vocabulary.kind(piece.original_id))
        masked_units.append(MaskedUnit(unit, pieces))
    return MaskPlan(maskable, masked_units, FillRequest(input_ids, positions, original_ids, kinds))


def perturb_text(
    text: str, models: PerturbationModels, params: PerturbationParams, seed: int, *, batched: bool = True
) -> PerturbationResult:
    """MASK, REPLACE, RANK. ``batched=False`` is the one-candidate-at-a-time baseline (benchmarks only)."""
    params.check()
    plan = mask_text(text, models, params, seed)
    if plan.request is None:
        return PerturbationResult(text, text, [], [], None, seed, params.as_dict(), len(plan.maskable))
    generator = torch.Generator().manual_seed(seed)
    filled = fill_candidates(
        models.masked.model, models.masked.vocabulary, plan.request, candidates=params.candidates,
        top_k=params.top_k, temperature=params.temperature, generator=generator, batched=batched,
    )
    texts_and_spans = [_assemble(text, plan.masked, row.tolist(), models.masked.vocabulary) for row in filled]
    candidate_texts = [candidate for candidate, _ in texts_and_spans]
    scores = perplexities(models.causal.model, models.causal.tokenizer, candidate_texts,
                          rows_per_pass=None if batched else 1)
    best = min(range(len(scores)), key=lambda index: (scores[index], index))
    return PerturbationResult(
        original=text, text=candidate_texts[best], spans=texts_and_spans[best][1], perplexities=scores,
        chosen=best, seed=seed, params=params.as_dict(), maskable_units=len(plan.maskable),
        candidates=candidate_texts,
    )
