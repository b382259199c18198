"""Checking judge settings before anything is written: the limits, JudgeSettingsError, and the clean_* helpers.

A refusal names the field (``JudgeSettingsError.field``) so a page can put the message beside it, and
``problems`` holds every bad field at once. An API key is never accepted: a judge stores the NAME of the
environment variable that holds it, and a value that looks like a key is refused without echoing it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import Any
from urllib.parse import urlsplit

from judging.clients.chat.allowed import key_refusal
from judging.clients.nli import ModelSettingError, check_nli_checkpoint, checkpoint_max_length, model_directory
from judging.clients.nli_allowed import model_path_refusal
from judging.judges.nli import overlap_problem
from judging.labels import setting_label
from judging.models import Judge

RUBRIC_SETTINGS = (
    "base_url", "model", "api_key_env", "with_reasoning", "concurrency", "timeout_seconds", "max_retries",
    "price_input_per_mtok", "price_output_per_mtok",
)
NLI_SETTINGS = ("nli_model_path", "nli_max_length", "nli_overlap", "nli_batch_size", "nli_consistent_label")
MAX_CONCURRENCY = 256
MAX_TIMEOUT_SECONDS = 600.0
MAX_RETRIES = 10
_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")
# Prefixes of API keys of common providers (OpenAI, Anthropic, Groq, Hugging Face, Google, xAI, Replicate...).
_KEY_PREFIXES = ("sk-", "sk_", "gsk_", "hf_", "aiza", "xai-", "r8_", "pk-", "key-", "ghp_", "github_pat_")


class JudgeSettingsError(Exception):
    """A judge, run or triage setting that cannot be used; ``field`` names it, the message says why.

    ``problems`` holds every bad setting found, field -> messages (one field unless made by :meth:`of`), so a
    form or an API answer can name them all at once instead of one per try.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.problems: dict[str, list[str]] = {field: [message]}

    @classmethod
    def of(cls, problems: dict[str, list[str]]) -> JudgeSettingsError:
        """Several bad settings in one error; as a single one (``field``, the message) it is the first."""
        field, messages = next(iter(problems.items()))
        error = cls(field, messages[0])
        error.problems = problems
        return error


def add_problems(problems: dict[str, list[str]], found: dict[str, list[str]]) -> None:
    for field, messages in found.items():
        problems.setdefault(field, []).extend(messages)


def looks_like_api_key(value: str) -> bool:
    """Whether an api_key_env value is probably a key pasted where the variable's name belongs."""
    lowered = value.lower()
    if lowered.startswith(_KEY_PREFIXES) or len(value) > 100:
        return True
    if not _ENV_NAME.fullmatch(value.upper()):
        return True
    # Names are one case (OPENAI_API_KEY, openai_key); random keys mix upper, lower and digits.
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value) and any(c.isdigit() for c in value)
    return len(value) >= 24 and mixed


def clean_api_key_env(value: Any) -> str:
    """The variable name, stripped; blank means the endpoint needs no key (local servers)."""
    name = str(value or "").strip()
    if name and looks_like_api_key(name):
        # The value is not repeated in the message: it may be a secret.
        raise JudgeSettingsError(
            "api_key_env",
            f"{setting_label('api_key_env')} must be the NAME of an environment variable (letters, digits and _, "
            "e.g. OPENAI_API_KEY), not the key itself: put the key in an environment variable of the server and the "
            "worker, and give that variable's name here.",
        )
    return name


def clean_base_url(value: Any) -> str:
    url = str(value or "").strip().rstrip("/")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JudgeSettingsError(
            "base_url",
            f"{setting_label('base_url')} must be an http(s) URL such as http://127.0.0.1:11434/v1, not {url!r}.",
        )
    if parts.username or parts.password:
        # A password in the URL would be stored; keys belong in an environment variable.
        raise JudgeSettingsError(
            "base_url",
            f"{setting_label('base_url')} must not hold a user name or password: give the key's environment variable "
            f"as the {setting_label('api_key_env')} instead.",
        )
    return url


def checked_number(field: str, value: Any, *, integer: bool) -> float:
    label = setting_label(field)
    if isinstance(value, bool):
        raise JudgeSettingsError(field, f"{label} must be a number, not {value!r}.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise JudgeSettingsError(field, f"{label} must be a number, not {value!r}.") from None
    if not math.isfinite(number):
        raise JudgeSettingsError(field, f"{label} must be a finite number, not {value!r}.")
    if integer and number != int(number):
        raise JudgeSettingsError(field, f"{label} must be a whole number, not {value!r}.")
    return number


def in_range(field: str, value: Any, low: float, high: float | None, *, integer: bool) -> Any:
    number = checked_number(field, value, integer=integer)
    if number < low or (high is not None and number > high):
        bounds = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise JudgeSettingsError(field, f"{setting_label(field)} must be {bounds}, not {value!r}.")
    return int(number) if integer else number


def _positive(field: str, value: Any, high: float) -> float:
    number = checked_number(field, value, integer=False)
    if not 0 < number <= high:
        raise JudgeSettingsError(
            field, f"{setting_label(field)} must be more than 0 and at most {high:g}, not {value!r}."
        )
    return number


def clean_nli_model_path(value: Any, *, limited: bool = False) -> str:
    """A directory on this server, or the id of a model in the local Hugging Face cache (kept as given: the run
    finds its snapshot in the cache, never downloading). ``limited``: saved by a project admin who is not site staff,
    who may name only cached model ids and directories inside FAITHLAB_NLI_MODEL_DIRS; that rule is checked before
    the path is looked at, so its one refusal tells nothing of the server's files."""
    path = str(value or "").strip()
    if not path:
        raise JudgeSettingsError("nli_model_path", f"{setting_label('nli_model_path')} is required: a local model "
                                                   "directory, or the id of a model in the local Hugging Face cache.")
    refusal = model_path_refusal(path) if limited else ""
    if refusal:
        raise JudgeSettingsError("nli_model_path", refusal)
    try:
        model_directory(path)
    except ModelSettingError as error:
        raise JudgeSettingsError("nli_model_path", str(error)) from None
    return path


def _clean_setting(field: str, value: Any, *, limited: bool = False) -> Any:
    """One setting, checked and normalised; JudgeSettingsError says why it cannot be used. ``limited``: as
    clean_each."""
    if field == "base_url":
        return clean_base_url(value)
    if field == "model":
        model = str(value or "").strip()
        if not model or len(model) > 200:
            raise JudgeSettingsError(
                "model", f"{setting_label('model')} must be the endpoint's model name (1 to 200 characters)."
            )
        return model
    if field == "api_key_env":
        return clean_api_key_env(value)
    if field == "with_reasoning":
        if not isinstance(value, bool):
            raise JudgeSettingsError(field, f"{setting_label(field)} must be true or false, not {value!r}.")
        return value
    if field == "concurrency":
        return in_range(field, value, 1, MAX_CONCURRENCY, integer=True)
    if field == "timeout_seconds":
        return _positive(field, value, MAX_TIMEOUT_SECONDS)
    if field == "max_retries":
        return in_range(field, value, 0, MAX_RETRIES, integer=True)
    if field in ("price_input_per_mtok", "price_output_per_mtok"):
        # Blank (None, "") is a price not known: the calls' cost is then not known either; 0 is free.
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        return in_range(field, value, 0, None, integer=False)
    if field == "nli_model_path":
        return clean_nli_model_path(value, limited=limited)
    if field == "nli_max_length":
        return in_range(field, value, 16, 100_000, integer=True)
    if field == "nli_overlap":
        return in_range(field, value, 0, 100_000, integer=True)
    if field == "nli_batch_size":
        return in_range(field, value, 1, 4096, integer=True)
    return str(value or "").strip()[:50]  # nli_consistent_label


def clean_each(
    kind: str, values: dict[str, Any], *, limited: bool = False
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The settings that can be used, cleaned, and the problems of the others (every one, not the first).
    ``limited``: given by a project admin who is not site staff (edit.hosts_limited), whose NLI model path must be
    one FAITHLAB_NLI_MODEL_DIRS allows."""
    allowed = {Judge.Kind.RUBRIC: RUBRIC_SETTINGS, Judge.Kind.NLI: NLI_SETTINGS, Judge.Kind.IMPORTED: ()}
    if kind not in allowed:
        return {}, {"kind": [f"{setting_label('kind')} must be one of {', '.join(allowed)}, not {kind!r}."]}
    cleaned: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    for field, value in values.items():
        if field not in allowed[kind]:
            add_problems(problems, {field: [f"A {kind} judge has no setting {field!r}."]})
            continue
        try:
            cleaned[field] = _clean_setting(field, value, limited=limited)
        except JudgeSettingsError as error:
            add_problems(problems, error.problems)
    return cleaned, problems


def clean_judge_settings(kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """The settings of a judge of `kind`, checked and normalised; JudgeSettingsError names every bad field."""
    cleaned, problems = clean_each(kind, values)
    if problems:
        raise JudgeSettingsError.of(problems)
    return cleaned


def completeness_problems(kind: str, values: dict[str, Any], *, skip: Collection[str] = ()) -> dict[str, list[str]]:
    """What a judge of `kind` lacks, or what its settings together rule out; ``skip``: fields refused already."""
    problems: dict[str, list[str]] = {}
    if kind == Judge.Kind.RUBRIC:
        for field in ("base_url", "model"):
            if field not in skip and not values.get(field):
                problems[field] = [f"{setting_label(field)} is required for a rubric LLM judge."]
        if not {"api_key_env", "base_url"} & set(skip) and values.get("base_url"):
            # Only the variables the operator allows for the endpoint's host are ever read (FAITHLAB_JUDGE_KEYS).
            refusal = key_refusal(values.get("api_key_env") or "", values["base_url"])
            if refusal:
                problems["api_key_env"] = [refusal]
    elif kind == Judge.Kind.NLI:
        if "nli_model_path" not in skip:
            if not values.get("nli_model_path"):
                problems["nli_model_path"] = [f"{setting_label('nli_model_path')} is required for an NLI judge."]
            else:
                if "nli_consistent_label" not in skip:
                    try:  # config.json alone: no model is loaded in a web request
                        check_nli_checkpoint(values["nli_model_path"], values.get("nli_consistent_label", ""),
                                             needs_config=False)
                    except ModelSettingError as error:
                        add_problems(problems, {error.setting: [str(error)]})
                if "nli_max_length" not in skip:
                    add_problems(problems, _window_longer_than_model(values["nli_model_path"],
                                                                     values.get("nli_max_length", 512)))
        if not {"nli_overlap", "nli_max_length"} & set(skip):
            problem = overlap_problem(values.get("nli_max_length", 512), values.get("nli_overlap", 32))
            if problem:
                add_problems(problems, {"nli_overlap": [problem]})
    return problems


def _window_longer_than_model(path: str, max_length: int) -> dict[str, list[str]]:
    """A window longer than the model takes (its tokenizer_config.json and config.json say how long: every window
    would fail on the worker), as a problem of nli_max_length; nothing when the files do not say, or are not there."""
    try:
        limit = checkpoint_max_length(path)
    except ModelSettingError:
        return {}  # the path's own problem is reported beside it
    if limit is None or max_length <= limit:
        return {}
    return {"nli_max_length": [
        f"{setting_label('nli_max_length')} {max_length} is more than the model at {path!r} takes ({limit} tokens, "
        f"from its config.json and tokenizer_config.json): make it at most {limit}."
    ]}
