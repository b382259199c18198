"""REPLACE: a masked language model fills the masked word pieces left to right, one piece at a time.

Every masked piece starts as the mask token. Step t asks the model for the
distribution at the t-th masked piece (in text order), with the pieces before it
already filled and the ones after it still masked, so each piece is chosen
knowing the replacements to its left. The original piece is removed from the
distribution, then top-k sampling with a temperature picks the new piece. A
word-start piece is replaced by a word-start piece and a continuation piece
("##ga") by a continuation piece, so a unit keeps as many pieces, and words, as
it had; special tokens and pieces without a letter or digit are never chosen.

BATCH: the candidates of one text share its masked positions, so all of them
go through the model together, one forward pass per masked piece (the
one-at-a-time baseline, ``batched=False``, runs the same steps for one
candidate after the other and gives the same pieces). Candidates whose pieces
so far are identical are the same input; the model sees each distinct one
once. Sampling uses uniforms drawn up front from a seeded ``torch.Generator``,
one per candidate and step, so a seed gives the same perturbation whichever
way the forward passes are grouped. The model may sit on a GPU: only its input
rows go there, and only the logits at the filled position come back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import torch

WORD_START, CONTINUATION = 0, 1


@dataclass(frozen=True)
class PieceVocabulary:
    """What the fill may choose from, and how a piece reads in text, for one masked-LM tokenizer."""

    allowed: torch.Tensor  # bool [2, model vocab]: row WORD_START and row CONTINUATION
    surfaces: list[str]  # a piece's characters as they appear in text ("##ga" -> "ga")
    continuation: list[bool]
    lowercases: bool  # the tokenizer folds case, so replacements take the original's capitals
    mask_id: int

    def kind(self, piece_id: int) -> int:
        return CONTINUATION if self.continuation[piece_id] else WORD_START


def piece_vocabulary(tokenizer: Any, model_vocab_size: int) -> PieceVocabulary:
    """Built once per tokenizer. Ids the model has but the tokenizer lacks are never allowed."""
    backend = tokenizer.backend_tokenizer
    spec = json.loads(backend.to_str())["model"]
    prefix = spec.get("continuing_subword_prefix") if spec.get("type") == "WordPiece" else None
    size = max(model_vocab_size, len(tokenizer))
    tokens = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    special = set(tokenizer.all_special_ids)
    surfaces = [""] * size
    continuation = [False] * size
    allowed = torch.zeros((2, model_vocab_size), dtype=torch.bool)
    for piece_id, token in enumerate(tokens):
        if token is None:
            continue
        if prefix is not None:
            is_continuation = token.startswith(prefix) and len(token) > len(prefix)
            surface = token[len(prefix):] if is_continuation else token
        else:  # byte-level BPE ("Ġword") and SentencePiece ("▁word") mark the word start instead
            is_continuation = not token.startswith(("Ġ", "▁"))
            surface = tokenizer.convert_tokens_to_string([token]).strip()
        surfaces[piece_id] = surface
        continuation[piece_id] = is_continuation
        # "[unused7]"-style placeholders are in BERT's vocabulary but are no words.
        choosable = (
            piece_id not in special
            and piece_id < model_vocab_size
            and any(ch.isalnum() for ch in surface)
            and not (token.startswith("[") and token.endswith("]"))
            and not (token.startswith("<") and token.endswith(">"))
        )
        if choosable:
            allowed[CONTINUATION if is_continuation else WORD_START, piece_id] = True
    normalizer = backend.normalizer
    lowercases = normalizer is not None and normalizer.normalize_str("Ab") == "ab"
    if tokenizer.mask_token_id is None:
        raise ValueError("the masked LM's tokenizer has no mask token: it is not a masked language model's tokenizer")
    return PieceVocabulary(allowed, surfaces, continuation, lowercases, int(tokenizer.mask_token_id))


def piece_distribution(
    logits: torch.Tensor, original_id: int, allowed: torch.Tensor, top_k: int, temperature: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """(piece ids, probabilities) of the top-k choosable pieces after removing the original, per row.

    ``logits`` is [rows, vocab]; ``allowed`` is the bool [vocab] row of the piece's kind. The original
    piece and every piece not allowed get probability zero; the rest is the softmax of logits/temperature
    over the k best. Raises ValueError when nothing may be chosen.
    """
    scores = logits.float() / temperature
    blocked = ~allowed
    if 0 <= original_id < blocked.numel():
        blocked[original_id] = True
    available = int((~blocked).sum())
    if available == 0:
        raise ValueError("no word piece may replace this one: the masked LM's vocabulary has no other such piece")
    scores = scores.masked_fill(blocked, float("-inf"))
    values, indices = scores.topk(min(top_k, available), dim=-1)
    return indices, torch.softmax(values, dim=-1)


def choose_pieces(
    logits: torch.Tensor, original_id: int, allowed: torch.Tensor, top_k: int, temperature: float,
    uniforms: torch.Tensor,
) -> torch.Tensor:
    """One sampled piece id per row, by inverse CDF with the given uniforms in [0, 1)."""
    indices, probabilities = piece_distribution(logits, original_id, allowed, top_k, temperature)
    cumulative = probabilities.double().cumsum(dim=-1)
    targets = uniforms.double().unsqueeze(1) * cumulative[:, -1:]
    picks = torch.searchsorted(cumulative, targets, right=True).clamp(max=indices.shape[1] - 1)
    return indices.gather(1, picks).squeeze(1)


ROW_TOKENS = 8192  # input tokens per forward pass: bounds attention memory when texts are long


def model_device(model: Any) -> torch.device:
    """Where the model's weights are (transformers models say it; anything else is on the CPU)."""
    return getattr(model, "device", None) or torch.device("cpu")


def masked_logits(model: Any, rows: torch.Tensor, position: int) -> torch.Tensor:
    """Logits [rows, vocab] at one position, on the CPU. BERT- and RoBERTa-style models get the vocabulary
    projection at that position only (it is a fifth of BERT-base's forward pass over every position)."""
    per_pass = max(1, ROW_TOKENS // rows.shape[1])
    if rows.shape[0] > per_pass:
        return torch.cat([masked_logits(model, rows[first : first + per_pass], position)
                          for first in range(0, rows.shape[0], per_pass)])
    rows = rows.to(model_device(model))
    base = getattr(model, getattr(model, "base_model_prefix", ""), None)
    head = getattr(model, "cls", None)
    if head is None:
        head = getattr(model, "lm_head", None)
    if base is not None and head is not None:
        hidden = base(input_ids=rows).last_hidden_state
        return head(hidden[:, position]).cpu()
    return model(input_ids=rows).logits[:, position].cpu()


@dataclass(frozen=True)
class FillRequest:
    """One text's masked pieces: the model input and, per masked piece in text order, where and what it was."""

    input_ids: list[int]  # the text's pieces with the model's special tokens
    positions: list[int]  # indexes into input_ids of the masked pieces, ascending
    original_ids: list[int]
    kinds: list[int]  # WORD_START or CONTINUATION, the original piece's


def fill_candidates(
    model: Any, vocabulary: PieceVocabulary, request: FillRequest, *, candidates: int, top_k: int,
    temperature: float, generator: torch.Generator, batched: bool = True,
) -> torch.Tensor:
    """The new piece ids, [candidates, masked pieces]: row c is candidate c's replacements in text order."""
    steps = len(request.positions)
    uniforms = torch.rand((candidates, steps), generator=generator, dtype=torch.float64)
    start = torch.tensor(request.input_ids, dtype=torch.long)
    start[request.positions] = vocabulary.mask_id
    positions = torch.tensor(request.positions, dtype=torch.long)
    with torch.inference_mode():
        if batched:
            rows = start.repeat(candidates, 1)
            for step, position in enumerate(request.positions):
                distinct, which = torch.unique(rows, dim=0, return_inverse=True)
                logits = masked_logits(model, distinct, position)[which]
                rows[:, position] = choose_pieces(
                    logits, request.original_ids[step], vocabulary.allowed[request.kinds[step]], top_k, temperature,
                    uniforms[:, step],
                )
            return rows[:, positions]
        filled = []
        for candidate in range(candidates):
            row = start.clone().unsqueeze(0)
            for step, position in enumerate(request.positions):
                logits = masked_logits(model, row, position)
                row[:, position] = choose_pieces(
                    logits, request.original_ids[step], vocabulary.allowed[request.kinds[step]], top_k, temperature,
                    uniforms[candidate : candidate + 1, step],
                )
            filled.append(row[0, positions])
        return torch.stack(filled) if filled else torch.zeros((0, steps), dtype=torch.long)
