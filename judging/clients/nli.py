"""Local NLI models: loading an NLI judge's sequence classifier from a directory (part of judging.clients)."""

from __future__ import annotations

# Importing this module loads neither torch nor transformers; loading a model does (once per process).
import threading
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from annotate.checkpoints import SEQUENCE_CLASSIFIER_HEADS, CheckpointProblem, require_head
from judging.labels import setting_label
from judging.windows import PairTemplate, template_from_probe

# How the messages name the two settings they refer to: as the judge's form labels them.
_MODEL_PATH = setting_label("nli_model_path")
_CONSISTENT_LABEL = setting_label("nli_consistent_label")
# Label names that mean "the hypothesis follows from the reference", lower-cased.
CONSISTENT_LABELS = ("consistent", "entailment", "supported")
# Any two texts will do for reading the pair template; these are plain words in every vocabulary we know.
_PROBE_REFERENCE = "the source text"
_PROBE_HYPOTHESIS = "the summary"


class ModelSettingError(Exception):
    """A local model setting that does not work; ``setting`` names the judge field to change."""

    def __init__(self, message: str, *, setting: str) -> None:
        super().__init__(message)
        self.setting = setting


@dataclass(frozen=True)
class NliModel:
    """A loaded sequence-classification model and what scoring needs to know about it.

    ``consistent_index`` is the output class whose probability is P(consistent);
    for a model with a single output (a cross-encoder with one logit) it is 0 and
    P(consistent) is the sigmoid of that logit. ``max_length`` is the longest
    input the model takes (None when neither tokenizer nor config says).
    ``template`` is the tokenizer's pair template (where its special tokens go).
    """

    path: str
    tokenizer: Any
    model: Any
    consistent_index: int
    device: Any
    template: PairTemplate
    max_length: int | None
    num_labels: int

    @property
    def consistent_label(self) -> str:
        labels = getattr(self.model.config, "id2label", None) or {}
        return str(labels.get(self.consistent_index, self.consistent_index))


_nli_cache: dict[tuple[str, str], NliModel] = {}
_nli_lock = threading.Lock()


def load_nli_model(path: str, *, consistent_label: str = "") -> NliModel:
    """Load (once per process, per path and label) the NLI model in a local directory; nothing is downloaded.

    Which class is "consistent": ``consistent_label`` when given (a label name
    from the model's ``config.id2label``, case-insensitive, or a class index);
    else the label named "consistent", "entailment" or "supported"; else class 1
    of a two-class model (HHEM's convention: 0 hallucinated, 1 consistent); a
    one-output model is read through a sigmoid. Anything else raises
    ModelSettingError naming ``nli_consistent_label``. A path that is missing
    or does not load raises ModelSettingError naming ``nli_model_path``.
    Torch's thread settings are left as the process configured them.
    """
    key = (path, consistent_label)
    with _nli_lock:
        if key not in _nli_cache:
            _nli_cache[key] = _load_nli_model(path, consistent_label)
        return _nli_cache[key]


def check_nli_checkpoint(path: str, consistent_label: str = "", *, needs_config: bool = True) -> None:
    """Refuse, from config.json alone (nothing loaded), a directory that cannot be an NLI judge's model.

    A checkpoint saved with another head (a masked LM, GPT-2) would load with a
    random classification head and give meaningless p; a classifier whose
    consistent class cannot be told (three unnamed classes) gives no
    P(consistent). Raises ModelSettingError naming the field to change.
    ``needs_config`` False lets a directory without config.json pass (judges
    may be set up before their model is copied in; the run then fails naming it).
    """
    if not path:
        raise ModelSettingError(f"{_MODEL_PATH} is empty: set it to a local model directory.", setting="nli_model_path")
    directory = Path(path).expanduser()
    if not needs_config and directory.is_dir() and not (directory / "config.json").is_file():
        return
    try:
        checkpoint = require_head(path, SEQUENCE_CLASSIFIER_HEADS, "a sequence-classification model (NLI, HHEM-style)")
    except CheckpointProblem as problem:
        raise ModelSettingError(f"{_MODEL_PATH} {path!r} {problem}.", setting="nli_model_path") from None
    if checkpoint.labels:
        labels = SimpleNamespace(num_labels=len(checkpoint.labels), id2label=checkpoint.labels)
        _consistent_index(labels, consistent_label, path)


def _load_nli_model(path: str, consistent_label: str) -> NliModel:
    check_nli_checkpoint(path, consistent_label)
    directory = Path(path).expanduser()
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # a bar per load would fill the worker's log
    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(directory, local_files_only=True)
    except Exception as error:
        raise ModelSettingError(
            f"{_MODEL_PATH} {path!r} does not load as a sequence-classification model ({error}).",
            setting="nli_model_path",
        ) from error
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device).eval()
    num_labels = int(model.config.num_labels)
    return NliModel(
        path=path,
        tokenizer=tokenizer,
        model=model,
        consistent_index=_consistent_index(model.config, consistent_label, path),
        device=device,
        template=_pair_template(tokenizer, path),
        max_length=_model_max_length(tokenizer, model.config),
        num_labels=num_labels,
    )


def _consistent_index(config: Any, consistent_label: str, path: str) -> int:
    num_labels = int(config.num_labels)
    labels = {int(index): str(name) for index, name in (getattr(config, "id2label", None) or {}).items()}
    wanted = consistent_label.strip().lower()
    if wanted:
        for index, name in sorted(labels.items()):
            if name.lower() == wanted:
                return index
        if wanted.isdigit() and int(wanted) < num_labels:
            return int(wanted)
        raise ModelSettingError(
            f"{_CONSISTENT_LABEL} {consistent_label!r} is not a class of the model at {path!r} "
            f"(its classes: {', '.join(f'{i} {n}' for i, n in sorted(labels.items())) or 'none named'}).",
            setting="nli_consistent_label",
        )
    if num_labels == 1:
        return 0
    for index, name in sorted(labels.items()):
        if name.lower() in CONSISTENT_LABELS:
            return index
    if num_labels == 2:
        return 1
    raise ModelSettingError(
        f"the model at {path!r} has {num_labels} classes and none is named "
        f"{' / '.join(CONSISTENT_LABELS)}: set the {_CONSISTENT_LABEL.lower()} to the consistent class's name or index.",
        setting="nli_consistent_label",
    )


def _pair_template(tokenizer: Any, path: str) -> PairTemplate:
    # transformers 5 tokenizers have no build_inputs_with_special_tokens, so the
    # template is read off one encoded pair and checked against the tokenizer's own count.
    reference_ids = tokenizer(_PROBE_REFERENCE, add_special_tokens=False)["input_ids"]
    hypothesis_ids = tokenizer(_PROBE_HYPOTHESIS, add_special_tokens=False)["input_ids"]
    pair = tokenizer(_PROBE_REFERENCE, _PROBE_HYPOTHESIS)
    token_types = pair.get("token_type_ids") if "token_type_ids" in tokenizer.model_input_names else None
    try:
        template = template_from_probe(list(pair["input_ids"]), token_types, reference_ids, hypothesis_ids)
    except ValueError as error:
        raise ModelSettingError(f"{_MODEL_PATH} {path!r}: the tokenizer's {error}.", setting="nli_model_path") from error
    expected = tokenizer.num_special_tokens_to_add(pair=True)
    if template.specials != expected:
        raise ModelSettingError(
            f"{_MODEL_PATH} {path!r}: the tokenizer puts {template.specials} special tokens around a pair but "
            f"says it adds {expected}; its pair template cannot be used for windows.",
            setting="nli_model_path",
        )
    return template


def _model_max_length(tokenizer: Any, config: Any) -> int | None:
    # Tokenizers saved without a limit report a huge sentinel; then the config's positions decide.
    declared = int(getattr(tokenizer, "model_max_length", 0) or 0)
    if 0 < declared < 1_000_000:
        return declared
    positions = getattr(config, "max_position_embeddings", None)
    return int(positions) if positions else None
