"""Local NLI models: loading an NLI judge's sequence classifier from a directory, or by model id from the local
Hugging Face cache (never downloaded), and what its config.json says before any loading (part of judging.clients)."""

from __future__ import annotations

# Importing this module loads neither torch nor transformers; loading a model does (once per process).
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from annotate.checkpoints import SEQUENCE_CLASSIFIER_HEADS, CheckpointProblem, read_checkpoint, require_head
from judging.labels import setting_label
from judging.windows import PairTemplate, template_from_probe

# How the messages name the two settings they refer to: as the judge's form labels them.
_MODEL_PATH = setting_label("nli_model_path")
_CONSISTENT_LABEL = setting_label("nli_consistent_label")
# Label names that mean "the hypothesis follows from the reference", lower-cased.
CONSISTENT_LABELS = ("consistent", "entailment", "supported")
# Model types whose position ids start after the padding index, so two of their max_position_embeddings are unusable.
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "data2vec-text", "xmod", "ibert")
# A tokenizer saved without a limit reports a huge sentinel instead of one.
_NO_LIMIT = 1_000_000
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


def model_directory(path: str) -> Path:
    """The directory of an NLI judge's model: ``path`` itself when it is a directory on this server, else, when it
    reads as a model id ("vectara/hallucination_evaluation_model"), that model's snapshot in the local Hugging Face
    cache (HF_HOME / HF_HUB_CACHE), looked up with the hub switched off: nothing is ever downloaded. Raises
    ModelSettingError naming ``nli_model_path`` when it is neither."""
    if not path:
        raise ModelSettingError(f"{_MODEL_PATH} is empty: set it to a local model directory or the id of a model in "
                                "the local Hugging Face cache.", setting="nli_model_path")
    directory = Path(path).expanduser()
    if directory.is_dir():
        return directory
    if not is_model_id(path):
        raise ModelSettingError(f"{_MODEL_PATH} {path!r} is not a directory on this server.", setting="nli_model_path")
    cached = cached_snapshot(path)
    if cached is None:
        from huggingface_hub import constants

        raise ModelSettingError(
            f"{_MODEL_PATH} {path!r} is not a directory on this server, and no model with that id is in the local "
            f"Hugging Face cache ({constants.HF_HUB_CACHE}). FaithLab never downloads models: download it into that "
            f"cache first (`hf download {path}`, on this machine or on one with network whose cache you copy here; "
            "HF_HOME or HF_HUB_CACHE say where the cache is), or give the model's directory.",
            setting="nli_model_path",
        )
    return cached


def is_model_id(value: str) -> bool:
    """Whether ``value`` reads as a Hugging Face model id ("org/name": no leading /, no ".."); nothing is looked up."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    try:
        validate_repo_id(value)
    except HFValidationError:
        return False
    return True


def cached_snapshot(model_id: str) -> Path | None:
    """The model's snapshot folder in the local Hugging Face cache, or None; never a network call."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import HFValidationError, LocalEntryNotFoundError

    try:
        folder = Path(snapshot_download(model_id, local_files_only=True))
    except (LocalEntryNotFoundError, HFValidationError, OSError, ValueError):
        return None
    return folder if folder.is_dir() else None


def check_nli_checkpoint(path: str, consistent_label: str = "", *, needs_config: bool = True) -> None:
    """Refuse, from config.json alone (nothing loaded), a directory or cached model id that cannot be an NLI judge's
    model.

    A checkpoint saved with another head (a masked LM, GPT-2) would load with a
    random classification head and give meaningless p; a classifier whose
    consistent class cannot be told (classes none of which is named
    consistent, entailment or supported, two unnamed ones included, with no
    consistent label set) gives no P(consistent). Raises ModelSettingError
    naming the field to change. ``needs_config`` False lets a directory without
    config.json pass (judges may be set up before their model is copied in; the
    run then fails naming it).
    """
    directory = model_directory(path)
    if not needs_config and not (directory / "config.json").is_file():
        return
    try:
        checkpoint = require_head(str(directory), SEQUENCE_CLASSIFIER_HEADS,
                                  "a sequence-classification model (NLI, HHEM-style)")
    except CheckpointProblem as problem:
        raise ModelSettingError(f"{_MODEL_PATH} {path!r} {problem}.", setting="nli_model_path") from None
    _consistent_index(_label_map(checkpoint.labels), consistent_label, path)


def _label_map(labels: dict[int, str]) -> SimpleNamespace:
    # A config.json naming no class and no class count gets transformers' default: two unnamed classes.
    labels = labels or {0: "LABEL_0", 1: "LABEL_1"}
    return SimpleNamespace(num_labels=len(labels), id2label=labels)


def consistent_class(path: str, consistent_label: str = "") -> str:
    """The class an NLI judge reads as P(consistent), as the judges page shows it: "1 (consistent)", "0 (its one
    output, through a sigmoid)". Read from config.json alone; raises ModelSettingError when it cannot be told (or
    the model is not there: the message says why)."""
    directory = model_directory(path)
    try:
        checkpoint = read_checkpoint(str(directory))
    except CheckpointProblem as problem:
        raise ModelSettingError(f"{_MODEL_PATH} {path!r} {problem}.", setting="nli_model_path") from None
    labels = _label_map(checkpoint.labels)
    index = _consistent_index(labels, consistent_label, path)
    if labels.num_labels == 1:
        return "0 (its one output, through a sigmoid)"
    return f"{index} ({labels.id2label.get(index, index)})"


def checkpoint_max_length(path: str) -> int | None:
    """The longest input the model at ``path`` (a directory or a cached model id) takes, from its tokenizer_config.json
    and config.json alone (what the loader finds: ``_model_max_length``); None when neither says. Raises
    ModelSettingError when the path does not resolve."""
    directory = model_directory(path)
    return _max_length_of(_json_file(directory / "tokenizer_config.json").get("model_max_length"),
                          _json_file(directory / "config.json"))


def _json_file(file: Path) -> dict[str, Any]:
    try:
        found = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return found if isinstance(found, dict) else {}


def _max_length_of(declared: Any, config: dict[str, Any]) -> int | None:
    """The smaller of the tokenizer's declared limit (when it declares a real one) and the model's usable positions
    (when its config gives them): a window longer than either fails (the tokenizer warns, the embeddings fail)."""
    limits = []
    if isinstance(declared, int | float) and 0 < declared < _NO_LIMIT:
        limits.append(int(declared))
    positions = config.get("max_position_embeddings")
    if isinstance(positions, int) and positions > 0:
        offset = 2 if str(config.get("model_type") or "") in _OFFSET_POSITIONS else 0
        limits.append(positions - offset)
    return min(limits) if limits else None


def _load_nli_model(path: str, consistent_label: str) -> NliModel:
    check_nli_checkpoint(path, consistent_label)
    directory = model_directory(path)
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
    # Two classes named nothing (LABEL_0, LABEL_1) are not read as HHEM's "1 is consistent": a model trained the
    # other way round would give 1 - p, and every score and flag would be the opposite of the truth.
    hint = " (0 or 1; HHEM-style models: 1)" if num_labels == 2 else ""
    raise ModelSettingError(
        f"the model at {path!r} has {num_labels} classes and none is named "
        f"{' / '.join(CONSISTENT_LABELS)}: set the {_CONSISTENT_LABEL.lower()} to the consistent class's name or "
        f"index{hint}.",
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
    # The smaller of the tokenizer's limit (a huge sentinel when saved without one) and the model's usable positions.
    return _max_length_of(getattr(tokenizer, "model_max_length", None),
                          {"max_position_embeddings": getattr(config, "max_position_embeddings", None),
                           "model_type": getattr(config, "model_type", "")})
