"""Judges of a project, the prompts they use (versioned), and the project's triage settings: every write here.

Settings are checked before anything is written, and a refusal names the field
(``JudgeSettingsError.field``) so a page can put the message beside it. An API
key is never accepted: a judge stores the NAME of the environment variable that
holds it, and a value that looks like a key is refused without echoing it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction

from annotate.models import Project
from judging import prompts
from judging.clients.nli import ModelSettingError, check_nli_checkpoint
from judging.labels import setting_label
from judging.models import Judge, JudgingSettings, PromptVersion

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


def _add(problems: dict[str, list[str]], found: dict[str, list[str]]) -> None:
    for field, messages in found.items():
        problems.setdefault(field, []).extend(messages)


class PromptRefused(Exception):
    """An edited prompt that cannot be saved (e.g. a rubric without a 1-5 scale); the message says why."""


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


def _number(field: str, value: Any, *, integer: bool) -> float:
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


def _in_range(field: str, value: Any, low: float, high: float | None, *, integer: bool) -> Any:
    number = _number(field, value, integer=integer)
    if number < low or (high is not None and number > high):
        bounds = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise JudgeSettingsError(field, f"{setting_label(field)} must be {bounds}, not {value!r}.")
    return int(number) if integer else number


def _positive(field: str, value: Any, high: float) -> float:
    number = _number(field, value, integer=False)
    if not 0 < number <= high:
        raise JudgeSettingsError(
            field, f"{setting_label(field)} must be more than 0 and at most {high:g}, not {value!r}."
        )
    return number


def clean_nli_model_path(value: Any) -> str:
    path = str(value or "").strip()
    if not path:
        raise JudgeSettingsError("nli_model_path", f"{setting_label('nli_model_path')} is required: a local model "
                                                   "directory.")
    if not Path(path).expanduser().is_dir():
        raise JudgeSettingsError("nli_model_path",
                                 f"{setting_label('nli_model_path')} {path!r} is not a directory on this server.")
    return path


def _clean_setting(field: str, value: Any) -> Any:
    """One setting, checked and normalised; JudgeSettingsError says why it cannot be used."""
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
        return _in_range(field, value, 1, MAX_CONCURRENCY, integer=True)
    if field == "timeout_seconds":
        return _positive(field, value, MAX_TIMEOUT_SECONDS)
    if field == "max_retries":
        return _in_range(field, value, 0, MAX_RETRIES, integer=True)
    if field in ("price_input_per_mtok", "price_output_per_mtok"):
        return _in_range(field, value, 0, None, integer=False)
    if field == "nli_model_path":
        return clean_nli_model_path(value)
    if field == "nli_max_length":
        return _in_range(field, value, 16, 100_000, integer=True)
    if field == "nli_overlap":
        return _in_range(field, value, 0, 100_000, integer=True)
    if field == "nli_batch_size":
        return _in_range(field, value, 1, 4096, integer=True)
    return str(value or "").strip()[:50]  # nli_consistent_label


def _clean_each(kind: str, values: dict[str, Any]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The settings that can be used, cleaned, and the problems of the others (every one, not the first)."""
    allowed = {Judge.Kind.RUBRIC: RUBRIC_SETTINGS, Judge.Kind.NLI: NLI_SETTINGS, Judge.Kind.IMPORTED: ()}
    if kind not in allowed:
        return {}, {"kind": [f"{setting_label('kind')} must be one of {', '.join(allowed)}, not {kind!r}."]}
    cleaned: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    for field, value in values.items():
        if field not in allowed[kind]:
            _add(problems, {field: [f"A {kind} judge has no setting {field!r}."]})
            continue
        try:
            cleaned[field] = _clean_setting(field, value)
        except JudgeSettingsError as error:
            _add(problems, error.problems)
    return cleaned, problems


def clean_judge_settings(kind: str, values: dict[str, Any]) -> dict[str, Any]:
    """The settings of a judge of `kind`, checked and normalised; JudgeSettingsError names every bad field."""
    cleaned, problems = _clean_each(kind, values)
    if problems:
        raise JudgeSettingsError.of(problems)
    return cleaned


def _completeness_problems(kind: str, values: dict[str, Any], *, skip: Collection[str] = ()) -> dict[str, list[str]]:
    """What a judge of `kind` lacks, or what its settings together rule out; ``skip``: fields refused already."""
    problems: dict[str, list[str]] = {}
    if kind == Judge.Kind.RUBRIC:
        for field in ("base_url", "model"):
            if field not in skip and not values.get(field):
                problems[field] = [f"{setting_label(field)} is required for a rubric LLM judge."]
    elif kind == Judge.Kind.NLI:
        if "nli_model_path" not in skip:
            if not values.get("nli_model_path"):
                problems["nli_model_path"] = [f"{setting_label('nli_model_path')} is required for an NLI judge."]
            elif "nli_consistent_label" not in skip:
                try:  # config.json alone: no model is loaded in a web request
                    check_nli_checkpoint(values["nli_model_path"], values.get("nli_consistent_label", ""),
                                         needs_config=False)
                except ModelSettingError as error:
                    _add(problems, {error.setting: [str(error)]})
        if not {"nli_overlap", "nli_max_length"} & set(skip) and values.get("nli_overlap", 32) >= values.get(
            "nli_max_length", 512
        ):
            _add(problems, {"nli_overlap": [
                f"{setting_label('nli_overlap')} must be smaller than {setting_label('nli_max_length')}."
            ]})
    return problems


def _check_complete(kind: str, values: dict[str, Any]) -> None:
    if problems := _completeness_problems(kind, values):
        raise JudgeSettingsError.of(problems)


def _clean_name(project: Project, name: Any, *, exclude: int | None = None) -> str:
    cleaned = str(name or "").strip()
    if not cleaned or len(cleaned) > 100:
        raise JudgeSettingsError("name", f"{setting_label('name')} must be 1 to 100 characters.")
    taken = Judge.objects.filter(project=project, name=cleaned)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    holder = taken.values_list("pk", flat=True).first()
    if holder is not None:
        raise JudgeSettingsError("name", _name_taken(cleaned, holder))
    return cleaned


def _name_taken(name: str, holder: int | None) -> str:
    """The refusal of a judge name in use, naming the judge that holds it, so a script can go on with that one."""
    which = f" (id {holder})" if holder is not None else ""
    return f"{setting_label('name')} {name!r} is already used by another judge of this project{which}."


def check_new_judge(
    project: Project, *, name: Any, kind: Any, settings: dict[str, Any], refused: Collection[str] = ()
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A judge to be created, checked whole: its cleaned name and settings, and every problem, field -> messages.

    ``refused`` names fields a caller has refused already (an API request's types and ranges): they are not
    checked again, nor reported missing, so one answer can list every field's problem. Nothing is written.
    """
    cleaned: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    if "name" not in refused:
        try:
            cleaned["name"] = _clean_name(project, name)
        except JudgeSettingsError as error:
            _add(problems, error.problems)
    if "kind" not in refused:
        settings_cleaned, settings_problems = _clean_each(kind, {f: v for f, v in settings.items() if f not in refused})
        cleaned |= settings_cleaned
        _add(problems, settings_problems)
        if "kind" not in settings_problems:
            _add(problems, _completeness_problems(kind, settings_cleaned, skip={*refused, *settings_problems}))
    return cleaned, problems


def create_judge(project: Project, *, name: str, kind: str, by: Any = None, **settings: Any) -> Judge:
    """A new judge of the project, after checking every setting (all refusals at once); nothing is written then."""
    cleaned, problems = check_new_judge(project, name=name, kind=kind, settings=settings)
    if problems:
        raise JudgeSettingsError.of(problems)
    judge_name = cleaned.pop("name")
    try:
        with transaction.atomic():
            return Judge.objects.create(project=project, name=judge_name, kind=kind, created_by=by, **cleaned)
    except IntegrityError:  # the same name saved by someone else meanwhile
        holder = Judge.objects.filter(project=project, name=judge_name).values_list("pk", flat=True).first()
        raise JudgeSettingsError("name", _name_taken(judge_name, holder)) from None


def check_judge_update(
    judge: Judge, settings: dict[str, Any], *, refused: Collection[str] = ()
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Changes to a judge's settings (and ``name``), checked whole: the cleaned changes and every problem.

    ``refused``: fields a caller has refused already (a form's types and ranges), neither checked again nor
    counted as changed. Nothing is written.
    """
    settings = {field: value for field, value in settings.items() if field not in refused}
    name = settings.pop("name", None)
    cleaned, problems = _clean_each(judge.kind, settings)
    merged = {field: getattr(judge, field) for field in (*RUBRIC_SETTINGS, *NLI_SETTINGS)} | cleaned
    _add(problems, _completeness_problems(judge.kind, merged, skip={*refused, *problems}))
    if name is not None:
        try:
            cleaned["name"] = _clean_name(judge.project, name, exclude=judge.pk)
        except JudgeSettingsError as error:
            _add(problems, error.problems)
    return cleaned, problems


def update_judge(judge: Judge, **settings: Any) -> Judge:
    """Change some settings (and the name) of a judge; all are checked before any is saved (every refusal at once)."""
    cleaned, problems = check_judge_update(judge, settings)
    if problems:
        raise JudgeSettingsError.of(problems)
    for field, value in cleaned.items():
        setattr(judge, field, value)
    if cleaned:
        judge.save(update_fields=list(cleaned))
    return judge


def endpoint_judge(
    project: Project,
    *,
    base_url: str,
    model: str,
    api_key_env: str = "",
    with_reasoning: bool = True,
    concurrency: int | None = None,
    by: Any = None,
) -> Judge:
    """The project's rubric judge for this endpoint, model and mode, created when there is none (the `judge` command).

    A different api_key_env or concurrency given here replaces the stored one.
    """
    values: dict[str, Any] = {"base_url": base_url, "model": model, "api_key_env": api_key_env,
                              "with_reasoning": with_reasoning}
    if concurrency is not None:
        values["concurrency"] = concurrency
    cleaned = clean_judge_settings(Judge.Kind.RUBRIC, values)
    found = Judge.objects.filter(
        project=project, kind=Judge.Kind.RUBRIC, base_url=cleaned["base_url"], model=cleaned["model"],
        with_reasoning=with_reasoning,
    ).order_by("pk").first()
    if found is not None:
        changes = {field: cleaned[field] for field in ("api_key_env", "concurrency")
                   if field in cleaned and getattr(found, field) != cleaned[field]}
        return update_judge(found, **changes) if changes else found
    mode = "reasoning" if with_reasoning else "score only"
    base = f"{cleaned['model'][: 100 - len(mode) - 10]} ({mode})"
    name, number = base, 1
    while Judge.objects.filter(project=project, name=name).exists():  # the same model on another endpoint
        number += 1
        name = f"{base} #{number}"
    return create_judge(project, name=name, kind=Judge.Kind.RUBRIC, by=by, **cleaned)


def current_prompt(project: Project, kind: str) -> PromptVersion:
    """The latest version of a prompt of the project; version 1 is the default text, made on first use."""
    if kind not in PromptVersion.Kind.values:
        raise PromptRefused(f"Unknown prompt kind {kind!r}: expected one of {', '.join(PromptVersion.Kind.values)}.")
    latest = PromptVersion.objects.filter(project=project, kind=kind).order_by("-number").first()
    if latest is not None:
        return latest
    try:
        with transaction.atomic():
            return PromptVersion.objects.create(
                project=project, kind=kind, number=1, text=prompts.default_prompt(kind), note="default"
            )
    except IntegrityError:  # made by a concurrent first use
        return PromptVersion.objects.filter(project=project, kind=kind).order_by("-number").first()


def _normalised(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").strip().split("\n"))


def save_prompt(project: Project, kind: str, text: str, *, by: Any = None, note: str = "") -> PromptVersion:
    """Save an edited prompt as the next version; the same text again makes no new version.

    A rubric must define the 1-5 scale, a rewrite prompt must hold its placeholders
    (judging.prompts); otherwise PromptRefused says what is missing, and nothing is
    written: not even version 1, the default text that the first save otherwise
    records before the edited one.
    """
    if kind not in PromptVersion.Kind.values:
        raise PromptRefused(f"Unknown prompt kind {kind!r}: expected one of {', '.join(PromptVersion.Kind.values)}.")
    cleaned = _normalised(str(text or ""))
    problems = prompts.rubric_problems(cleaned) if kind == "rubric" else prompts.rewrite_prompt_problems(cleaned)
    if problems:
        raise PromptRefused("; ".join(problems).capitalize() + ".")
    current = current_prompt(project, kind)
    if cleaned == _normalised(current.text):
        return current
    with transaction.atomic():
        number = (
            PromptVersion.objects.select_for_update().filter(project=project, kind=kind).order_by("-number").first()
        ).number + 1
        return PromptVersion.objects.create(
            project=project, kind=kind, number=number, text=cleaned, note=str(note or "")[:300], created_by=by
        )


def judging_settings(project: Project) -> JudgingSettings:
    """The project's triage settings, made with the defaults (score <= 3, p < 0.5) on first use."""
    found, _ = JudgingSettings.objects.get_or_create(project=project)
    return found


def update_judging_settings(project: Project, **fields: Any) -> JudgingSettings:
    """Change the project's triage: first_pass, explainer, llm_flag_at_most, nli_flag_below, blind_by_default,
    audits_per_item. All are checked before any is saved."""
    current = judging_settings(project)
    cleaned: dict[str, Any] = {}
    for field, value in fields.items():
        if field in ("first_pass", "explainer"):
            cleaned[field] = _settings_judge(project, field, value)
        elif field == "llm_flag_at_most":
            cleaned[field] = _in_range(field, value, 1, 5, integer=True)
        elif field == "nli_flag_below":
            cleaned[field] = _in_range(field, value, 0, 1, integer=False)
        elif field == "blind_by_default":
            if not isinstance(value, bool):
                raise JudgeSettingsError(field, f"{setting_label(field)} must be true or false, not {value!r}.")
            cleaned[field] = value
        elif field == "audits_per_item":
            cleaned[field] = _in_range(field, value, 1, 20, integer=True)
        else:
            raise JudgeSettingsError(field, f"The triage has no setting {field!r}.")
    for field, value in cleaned.items():
        setattr(current, field, value)
    if cleaned:
        current.save(update_fields=list(cleaned))
    return current


def _settings_judge(project: Project, field: str, value: Any) -> Judge | None:
    if value in (None, ""):
        return None
    if isinstance(value, Judge):
        judge: Judge | None = value
    else:
        judge = Judge.objects.filter(pk=int(_number(field, value, integer=True))).first()
    if judge is None or judge.project_id != project.pk:
        raise JudgeSettingsError(field, f"{setting_label(field)} must be a judge of this project.")
    # Imported judges are allowed in both places (teams that ran their judges elsewhere triage with them);
    # start_triage refuses to *run* an imported first pass, and an imported explainer is never run.
    if field == "explainer" and judge.kind == Judge.Kind.NLI:
        raise JudgeSettingsError(field, "The explainer must be a rubric LLM judge with reasoning (it explains).")
    if field == "explainer" and judge.kind == Judge.Kind.RUBRIC and not judge.with_reasoning:
        raise JudgeSettingsError(field, "The explainer must be a rubric LLM judge with reasoning (it explains).")
    return judge
