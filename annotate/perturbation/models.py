"""Loading the perturbation models from local paths, once per process.

Importing this module loads neither torch nor transformers (the project page
imports it for the setting hints); loading a model does.

The masked LM (BERT-style) and the causal LM (GPT-2-style) load with
``local_files_only=True`` and the hub switched off: nothing is ever
downloaded. A path that does not load raises PerturbationModelError with the
sentence the caller gave for it (which setting to fill in), so the message
names what to change.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from annotate.checkpoints import CAUSAL_LM_HEADS, MASKED_LM_HEADS, CheckpointProblem, require_head
from annotate.perturbation.units import RULES, SpacyPipelineError, load_pipeline

if TYPE_CHECKING:
    from annotate.perturbation.fill import PieceVocabulary

MASKED_HINT = "Set PAIRS_MASKED_LM (environment) or the project's masked LM path to a local BERT-style model directory."
CAUSAL_HINT = "Set PAIRS_CAUSAL_LM (environment) or the project's causal LM path to a local GPT-2-style model directory."
MASKED_WANTED = "a masked LM (BERT-style, e.g. BertForMaskedLM)"
CAUSAL_WANTED = "a causal LM (GPT-2-style, e.g. GPT2LMHeadModel)"


class PerturbationModelError(RuntimeError):
    pass


@dataclass(frozen=True)
class MaskedLM:
    path: str
    model: Any
    tokenizer: Any
    vocabulary: PieceVocabulary

    @property
    def max_length(self) -> int:
        limit = int(getattr(self.model.config, "max_position_embeddings", 512))
        return min(limit, int(self.tokenizer.model_max_length or limit))


@dataclass(frozen=True)
class CausalLM:
    path: str
    model: Any
    tokenizer: Any


@dataclass(frozen=True)
class PerturbationModels:
    """Everything perturb_text needs; ``describe()`` is what is stored with each perturbed text."""

    masked: MaskedLM
    causal: CausalLM
    nlp: Any
    spacy_pipeline: str = ""

    def describe(self) -> dict[str, str]:
        return {
            "masked_lm": self.masked.path,
            "causal_lm": self.causal.path,
            "spacy_pipeline": self.spacy_pipeline or RULES,
        }


_cache: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()


def _offline() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a bar per load would fill the worker's log


def _directory(path: str, what: str, hint: str, heads: tuple[str, ...], wanted: str) -> Path:
    if not path:
        raise PerturbationModelError(hint)
    try:
        require_head(path, heads, wanted)
    except CheckpointProblem as problem:
        raise PerturbationModelError(f"The {what} path {path!r} {problem}. {hint}") from None
    return Path(path).expanduser()


def _place(model: Any) -> Any:
    """On the GPU when torch sees one (as the NLI judge), else the CPU; in inference mode either way."""
    import torch

    return model.to(torch.device("cuda" if torch.cuda.is_available() else "cpu")).eval()


def _first_line(error: Exception) -> str:
    # transformers' load errors go on with a list of every model class it knows: the first line says it.
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def load_masked_lm(path: str, hint: str = MASKED_HINT) -> MaskedLM:
    key = ("masked", path)
    with _lock:
        if key not in _cache:
            directory = _directory(path, "masked LM", hint, MASKED_LM_HEADS, MASKED_WANTED)
            _offline()
            from transformers import AutoModelForMaskedLM, AutoTokenizer

            from annotate.perturbation.fill import piece_vocabulary

            try:
                tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
                model = _place(AutoModelForMaskedLM.from_pretrained(directory, local_files_only=True))
            except Exception as error:
                raise PerturbationModelError(
                    f"The masked LM at {path!r} does not load ({_first_line(error)}). {hint}"
                ) from error
            if not getattr(tokenizer, "is_fast", False):
                raise PerturbationModelError(
                    f"The masked LM at {path!r} has no fast tokenizer (tokenizer.json), which the word offsets "
                    f"need. {hint}"
                )
            try:
                vocabulary = piece_vocabulary(tokenizer, int(model.config.vocab_size))
            except ValueError as error:
                raise PerturbationModelError(f"The masked LM at {path!r}: {error}. {hint}") from error
            _cache[key] = MaskedLM(path, model, tokenizer, vocabulary)
    return _cache[key]


def load_causal_lm(path: str, hint: str = CAUSAL_HINT) -> CausalLM:
    key = ("causal", path)
    with _lock:
        if key not in _cache:
            directory = _directory(path, "causal LM", hint, CAUSAL_LM_HEADS, CAUSAL_WANTED)
            _offline()
            from transformers import AutoModelForCausalLM, AutoTokenizer

            try:
                tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
                model = _place(AutoModelForCausalLM.from_pretrained(directory, local_files_only=True))
            except Exception as error:
                raise PerturbationModelError(
                    f"The causal LM at {path!r} does not load ({_first_line(error)}). {hint}"
                ) from error
            _cache[key] = CausalLM(path, model, tokenizer)
    return _cache[key]


def load_spacy(name_or_path: str = "", setting: str = "PAIRS_SPACY_PIPELINE") -> Any:
    key = ("spacy", name_or_path)
    with _lock:
        if key not in _cache:
            try:
                _cache[key] = load_pipeline(name_or_path, setting=setting)
            except SpacyPipelineError as error:
                raise PerturbationModelError(str(error)) from error
    return _cache[key]


def load_models(
    masked_lm: str, causal_lm: str, spacy_pipeline: str = "", *, masked_hint: str = MASKED_HINT,
    causal_hint: str = CAUSAL_HINT, spacy_setting: str = "PAIRS_SPACY_PIPELINE",
) -> PerturbationModels:
    """The three models, each loaded once per process and kept."""
    return PerturbationModels(
        masked=load_masked_lm(masked_lm, masked_hint),
        causal=load_causal_lm(causal_lm, causal_hint),
        nlp=load_spacy(spacy_pipeline, spacy_setting),
        spacy_pipeline=spacy_pipeline,
    )


def forget_models() -> None:
    """Drop the loaded models (tests that rebuild a model at the same path)."""
    with _lock:
        _cache.clear()
