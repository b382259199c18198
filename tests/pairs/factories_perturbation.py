"""Tiny randomly initialised BERT and GPT-2 models, built and saved for the perturbation tests (no downloads).

The masked LM's WordPiece vocabulary covers the test texts word for word,
except "Varga" and "Lintown", which only split into pieces ("var" + "##ga"),
so a unit of several pieces is tested too; a few spare words and
continuation pieces give the fill something to choose. The causal LM's
tokenizer is a byte-level BPE trained on the same texts.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch

TEXTS = [
    "The Harbour Bridge in Lintown reopened on Tuesday after eight weeks of repairs. "
    "Engineers replaced the steel cables and resurfaced the eastern lane. "
    "Mayor Ines Varga said on 3 March 2024 that traffic would stay slow until the summer. "
    "The council paid 140 workers, and the bridge opened in 1911.",
    "A storm closed the railway station near the river. Passengers waited for hours in the cold hall. "
    "The company promised new trains for the spring and cheaper tickets for students. "
    "Doctors at the hospital treated twelve people for minor injuries.",
]
# Words the vocabulary only has in pieces: the pieces, in order.
SPLIT = {"varga": ["var", "##ga"], "lintown": ["lin", "##town"]}
SPARE_WORDS = (
    "tunnel harbour market village library museum teacher farmer winter autumn june july sold built "
    "repaired painted north south western quiet busy large small green tom price anna lee 1990 2001 seven"
).split()
SPARE_PIECES = ["##ri", "##la", "##en", "##to", "##son", "##er"]
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def wordpiece_vocabulary(texts: list[str]) -> list[str]:
    words: list[str] = []
    for text in texts:
        for word in re.findall(r"\w+|[^\w\s]", text.lower()):
            for piece in SPLIT.get(word, [word]):
                if piece not in words:
                    words.append(piece)
    extra = [word for word in SPARE_WORDS + SPARE_PIECES if word not in words]
    return SPECIALS + words + extra


def build_masked_lm(folder: Path, texts: list[str] = TEXTS, seed: int = 0) -> Path:
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    vocabulary = wordpiece_vocabulary(texts)
    tokenizer = BertTokenizer(vocab={piece: index for index, piece in enumerate(vocabulary)}, do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocabulary), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128,
    )
    model = BertForMaskedLM(config).eval()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def build_causal_lm(folder: Path, texts: list[str] = TEXTS, seed: int = 0) -> Path:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        [*texts, " ".join(SPARE_WORDS)], vocab_size=400, min_frequency=1, special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_positions=256, n_embd=32, n_layer=2, n_head=2,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    model = GPT2LMHeadModel(config).eval()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def build_tiny_models(folder: Path) -> tuple[Path, Path]:
    """(masked LM directory, causal LM directory) under ``folder``."""
    return build_masked_lm(folder / "tiny-bert"), build_causal_lm(folder / "tiny-gpt2")
