"""A tiny randomly initialised NLI model (BERT-like, two classes), built and saved for the judging tests; no downloads.

Classes follow HHEM: 0 "hallucinated", 1 "consistent". The WordPiece
vocabulary is the perturbation tests' (tests/pairs/factories_perturbation.py:
every word of their texts, a few split words and spare pieces) plus the
words below, so ``reference_text`` makes references of any length that
tokenize one word to one piece. 512 positions, as the windows default.

Other test modules use the session fixture::

    from tests.judging.tiny_nli import tiny_nli_fixture  # noqa: F401  (provides the tiny_nli_path fixture)

(The function has another name than the fixture so ruff sees no redefinition
where a test takes ``tiny_nli_path`` as an argument.)
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from tests.pairs.factories_perturbation import TEXTS, wordpiece_vocabulary

ID2LABEL = {0: "hallucinated", 1: "consistent"}
EXTRA_WORDS = "source text summary output council budget cost paid euros weeks nine eight report".split()
# Words that become exactly one piece each, for references of a known token count.
PLAIN_WORDS = sorted(
    {word for word in " ".join(TEXTS).lower().replace(".", " ").replace(",", " ").split() if word.isalpha()}
    - {"varga", "lintown"}
)


def vocabulary() -> list[str]:
    pieces = wordpiece_vocabulary(TEXTS)
    return pieces + [word for word in EXTRA_WORDS if word not in pieces]


def build_tiny_nli(path: str | Path, seed: int = 0) -> str:
    """Build the model and its tokenizer into ``path`` (created if needed); return the path as a string."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = Path(path)
    pieces = vocabulary()
    tokenizer = BertTokenizer(
        vocab={piece: index for index, piece in enumerate(pieces)}, do_lower_case=True, model_max_length=512
    )
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(pieces), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
        max_position_embeddings=512, num_labels=2, id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()},
        # Wider than BERT's 0.02 so windows get visibly different probabilities (max over windows is tested).
        initializer_range=0.5,
    )
    model = BertForSequenceClassification(config).eval()
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    model.save_pretrained(folder)
    return str(folder)


def reference_text(words: int, seed: int = 0) -> str:
    """``words`` words drawn from the vocabulary, each one token."""
    rng = random.Random(seed)
    return " ".join(rng.choice(PLAIN_WORDS) for _ in range(words))


@pytest.fixture(scope="session", name="tiny_nli_path")
def tiny_nli_fixture(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_tiny_nli(tmp_path_factory.mktemp("tiny-nli"))


# The announced name also imports (``from tests.judging.tiny_nli import tiny_nli_path``); same fixture.
tiny_nli_path = tiny_nli_fixture
