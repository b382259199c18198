"""What a local model directory holds, read from its config.json alone (no torch, no transformers).

transformers' Auto classes load almost any checkpoint into almost any head:
a BERT masked LM loads as a "causal LM" (a bidirectional model scoring
perplexity) and any encoder loads as a sequence classifier with a freshly
initialised, random classification head. Both then run and give numbers that
mean nothing. The saved ``architectures`` say which head the weights were
trained with, so a directory given for the wrong job is refused before any
model is loaded or any row is written. A config without ``architectures``
is left for the loader to judge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Class-name endings of the heads each job needs (transformers' naming).
MASKED_LM_HEADS = ("ForMaskedLM", "ForPreTraining", "WithLMHeadModel")
CAUSAL_LM_HEADS = ("ForCausalLM", "LMHeadModel")
SEQUENCE_CLASSIFIER_HEADS = ("ForSequenceClassification",)


class CheckpointProblem(ValueError):
    """The directory is no usable model of the kind asked for; the message says why (without the setting)."""


@dataclass(frozen=True)
class Checkpoint:
    path: str
    model_type: str
    architectures: tuple[str, ...]
    labels: dict[int, str] = field(default_factory=dict)

    def has_head(self, endings: tuple[str, ...]) -> bool:
        """True when a saved architecture has one of these heads, or when none is recorded (nothing to judge)."""
        return not self.architectures or any(name.endswith(endings) for name in self.architectures)

    def describe(self) -> str:
        return ", ".join(self.architectures) or self.model_type or "an unnamed model"


def read_checkpoint(path: str) -> Checkpoint:
    """The directory's config.json, or CheckpointProblem saying why it is no model directory."""
    directory = Path(path).expanduser()
    if not directory.is_dir():
        raise CheckpointProblem("is not a directory on this server")
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise CheckpointProblem("has no config.json, so it is no model directory")
    try:
        config: Any = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointProblem(f"has a config.json that is not readable JSON ({error})") from error
    if not isinstance(config, dict):
        raise CheckpointProblem("has a config.json that is not a JSON object")
    architectures = config.get("architectures") or []
    labels = config.get("id2label") or {}
    try:
        label_map = {int(index): str(name) for index, name in labels.items()} if isinstance(labels, dict) else {}
    except ValueError:
        label_map = {}
    if not label_map and isinstance(config.get("num_labels"), int):
        label_map = {index: f"LABEL_{index}" for index in range(config["num_labels"])}
    return Checkpoint(
        path=path,
        model_type=str(config.get("model_type") or ""),
        architectures=tuple(str(name) for name in architectures) if isinstance(architectures, list) else (),
        labels=label_map,
    )


def require_head(path: str, endings: tuple[str, ...], wanted: str) -> Checkpoint:
    """The checkpoint at ``path`` when it has one of the heads ``endings``; else CheckpointProblem.

    ``wanted`` names the kind of model in the message ("a masked LM (BERT-style)").
    """
    checkpoint = read_checkpoint(path)
    if not checkpoint.has_head(endings):
        raise CheckpointProblem(f"holds {checkpoint.describe()}, not {wanted}")
    return checkpoint
