"""RANK: the perplexity of each candidate under a causal language model; the pipeline keeps the lowest.

Perplexity is exp of the mean negative log-likelihood of the text's tokens.
The beginning-of-text token (GPT-2's ``<|endoftext|>``) is put in front when
the tokenizer has one, so the first word is scored too. Texts longer than the
model's window are scored on their first ``n_positions`` tokens.

Candidates go through the model together, padded on the right with an
attention mask (padding is never scored). Candidates of one text share
everything before the first replaced word (at least the kept context
sentences), so the batched path runs that shared prefix once, keeps its
key/value cache, and runs only the rest of each candidate on top of it: the
same numbers as a pass over each whole text, for a fraction of the work.
Rows are grouped so that one pass's logits stay under ``LOGITS_BUDGET`` floats
(GPT-2's vocabulary makes them large). On a GPU the inputs go to the model and
only the summed NLL per candidate comes back.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from annotate.perturbation.fill import model_device

LOGITS_BUDGET = 64_000_000  # floats: 256 MB of float32 logits per forward pass


def token_ids(tokenizer: Any, text: str, max_length: int) -> list[int]:
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    if tokenizer.bos_token_id is not None:
        ids = [int(tokenizer.bos_token_id), *ids]
    return ids[:max_length]


def _max_length(model: Any) -> int:
    config = model.config
    return int(getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", None) or 1024)


def _padded(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(ids) for ids in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, ids in enumerate(sequences):
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention[row, : len(ids)] = 1
    return input_ids, attention


def _token_nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """NLL of each target under the logits before it: logits [rows, n, vocab], targets [rows, n] -> [rows, n]."""
    rows, count, vocab = logits.shape
    flat = torch.nn.functional.cross_entropy(
        logits.reshape(rows * count, vocab).float(), targets.reshape(rows * count), reduction="none"
    )
    return flat.reshape(rows, count)


def total_nll(model: Any, sequences: list[list[int]], pad_id: int) -> list[float]:
    """Summed token NLL of each whole sequence, in one forward pass."""
    input_ids, attention = _padded(sequences, pad_id)
    input_ids, attention = input_ids.to(model_device(model)), attention.to(model_device(model))
    logits = model(input_ids=input_ids, attention_mask=attention).logits
    nll = _token_nll(logits[:, :-1], input_ids[:, 1:]).masked_fill(~attention[:, 1:].bool(), 0.0)
    return [float(value) for value in nll.double().sum(dim=1)]


def _common_prefix(sequences: list[list[int]]) -> int:
    shortest = min(len(ids) for ids in sequences)
    length = 0
    while length < shortest and all(ids[length] == sequences[0][length] for ids in sequences):
        length += 1
    return length


def _shared_prefix_nll(model: Any, sequences: list[list[int]], prefix: int, pad_id: int, rows_per_pass: int
                       ) -> list[float]:
    """Summed token NLL of each sequence, the first ``prefix`` tokens (the same in all) run once."""
    device = model_device(model)
    head = torch.tensor([sequences[0][:prefix]], dtype=torch.long, device=device)
    out = model(input_ids=head, use_cache=True)
    prefix_nll = float(_token_nll(out.logits[:, :-1], head[:, 1:]).double().sum()) if prefix > 1 else 0.0
    last = out.logits[:, -1:]  # predicts each candidate's first token after the prefix
    totals: list[float] = []
    for first in range(0, len(sequences), rows_per_pass):
        chunk = [ids[prefix:] for ids in sequences[first : first + rows_per_pass]]
        rest, attention = _padded(chunk, pad_id)
        rest, attention = rest.to(device), attention.to(device)
        rows, width = rest.shape
        cache = copy.deepcopy(out.past_key_values)
        cache.batch_repeat_interleave(rows)
        full_attention = torch.cat([torch.ones((rows, prefix), dtype=torch.long, device=device), attention], dim=1)
        positions = torch.arange(prefix, prefix + width, device=device).unsqueeze(0).expand(rows, width)
        logits = model(input_ids=rest, attention_mask=full_attention, past_key_values=cache,
                       position_ids=positions, use_cache=True).logits
        logits = torch.cat([last.expand(rows, 1, -1), logits[:, :-1]], dim=1)
        nll = _token_nll(logits, rest).masked_fill(~attention.bool(), 0.0)
        totals.extend(prefix_nll + float(value) for value in nll.double().sum(dim=1))
    return totals


def perplexities(model: Any, tokenizer: Any, texts: list[str], *, rows_per_pass: int | None = None) -> list[float]:
    """exp(mean token NLL) of each text. ``rows_per_pass=1`` is the one-text-at-a-time baseline."""
    if not texts:
        return []
    max_length = _max_length(model)
    sequences = [token_ids(tokenizer, text, max_length) for text in texts]
    if any(len(ids) < 2 for ids in sequences):
        raise ValueError("a candidate has fewer than two tokens for the causal LM: nothing to score")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    pad_id = int(pad_id) if pad_id is not None else 0
    vocab = int(model.config.vocab_size)
    with torch.inference_mode():
        if rows_per_pass is None and len(sequences) > 1:
            # Every candidate keeps at least one token of its own after the shared prefix.
            prefix = min(_common_prefix(sequences), min(len(ids) for ids in sequences) - 1)
            width = max(len(ids) for ids in sequences) - prefix
            rows = max(1, LOGITS_BUDGET // (width * vocab))
            totals = (_shared_prefix_nll(model, sequences, prefix, pad_id, rows) if prefix >= 1
                      else _batched_totals(model, sequences, pad_id, rows))
        else:
            width = max(len(ids) for ids in sequences)
            rows = rows_per_pass or max(1, LOGITS_BUDGET // (width * vocab))
            totals = _batched_totals(model, sequences, pad_id, rows)
    return [math.exp(total / (len(ids) - 1)) for total, ids in zip(totals, sequences, strict=True)]


def _batched_totals(model: Any, sequences: list[list[int]], pad_id: int, rows_per_pass: int) -> list[float]:
    totals: list[float] = []
    for first in range(0, len(sequences), rows_per_pass):
        totals.extend(total_nll(model, sequences[first : first + rows_per_pass], pad_id))
    return totals
