"""Changing a pairs project's settings (judges per item, spammer rules, perturbation, models), all or nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from annotate.models import PairConfig, Project
from annotate.services.pairs.config import get_config


@dataclass(frozen=True)
class SettingProblem:
    """Why one submitted setting was refused, worded twice: with the field's key (``problems``: commands, logs,
    tests) and with its label as the settings form shows it, to be shown beside that field."""

    field: str
    keyed: str  # "judges_per_item: 0 must be at least 1."
    shown: str  # "Judges per item: 0 must be at least 1."


class PairSettingsInvalid(ValueError):
    """One message per bad field, naming it; nothing was saved. ``by_field``: each bad field's messages, worded with
    its label, for the form to show beside it."""

    def __init__(self, refused: list[SettingProblem]) -> None:
        self.problems = [problem.keyed for problem in refused]
        super().__init__(" ".join(self.problems))
        self.by_field: dict[str, list[str]] = {}
        for problem in refused:
            self.by_field.setdefault(problem.field, []).append(problem.shown)


@dataclass(frozen=True)
class Setting:
    field: str
    label: str  # as the settings form shows it (templates/annotate/pairs/project.html)
    kind: Callable[[str], Any]  # int, float or str
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # True: the value must be strictly above `low`

    def problem(self, text: str, shown: str = "") -> SettingProblem:
        """A refusal of this setting; ``shown``: the text for the form, when it names another setting (by its label
        there, by its key in ``text``)."""
        return SettingProblem(field=self.field, keyed=f"{self.field}: {text}", shown=f"{self.label}: {shown or text}")


# The form's fields, in its order; a field missing from the submitted values keeps its current value.
SETTINGS = [
    Setting("judges_per_item", "Judges per item", int, 1, 50),
    Setting("max_judges_per_item", "At most, after splits", int, 1, 50),
    Setting("min_judgements", "Checked from this many answers", int, 1, 10_000),
    Setting("spam_min_mean_seconds", "Flag a mean time per item under (s)", float, 0, 3600),
    Setting("spam_max_disagreement", "Flag disagreeing with the others' majority on more than (share)", float, 0, 1),
    Setting("serve_minutes", "Minutes a served item is held", int, 1, 1440),
    Setting("context_sentences", "Sentences kept", int, 0, 100),
    Setting("mask_ratio", "Mask ratio", float, 0, 1, low_open=True),
    Setting("top_k", "Top-k", int, 1, 1000),
    Setting("temperature", "Temperature", float, 0, 100, low_open=True),
    Setting("candidates", "Candidates", int, 1, 200),
    Setting("min_counts", "Labelled items needed to train the detector and for the subsampling ratio", int, 1,
            100_000),
    Setting("masked_lm", "Masked LM (local path)", str),
    Setting("causal_lm", "Causal LM (local path)", str),
    Setting("spacy_pipeline", "spaCy pipeline", str),
    Setting("encoder", "Encoder (local path)", str),
]
SETTING_BY_FIELD = {setting.field: setting for setting in SETTINGS}


def _read(setting: Setting, raw: str) -> tuple[Any, SettingProblem | None]:
    raw = raw.strip()
    if setting.kind is str:
        return raw, None if len(raw) <= 500 else setting.problem("at most 500 characters.")
    try:
        value = setting.kind(raw)
    except ValueError:
        kind = "a whole number" if setting.kind is int else "a number"
        return None, setting.problem(f"{raw!r} is not {kind}.")
    if setting.low is not None and (value < setting.low or (setting.low_open and value == setting.low)):
        bound = "above" if setting.low_open else "at least"
        return None, setting.problem(f"{raw} must be {bound} {setting.low:g}.")
    if setting.high is not None and value > setting.high:
        return None, setting.problem(f"{raw} must be at most {setting.high:g}.")
    return value, None


def update_pair_settings(project: Project, values: Mapping[str, str]) -> PairConfig:
    """Check every submitted setting, then save them together; raise PairSettingsInvalid naming each bad one."""
    config = get_config(project)
    problems: list[SettingProblem] = []
    changes: dict[str, Any] = {}
    invalid: set[str] = set()
    for setting in SETTINGS:
        if setting.field not in values:
            continue
        value, problem = _read(setting, values[setting.field])
        if problem:
            problems.append(problem)
            invalid.add(setting.field)
        else:
            changes[setting.field] = value
    # Compared whenever both values are readable, so this error shows beside the other fields' errors at once.
    if not invalid & {"judges_per_item", "max_judges_per_item"}:
        judges = changes.get("judges_per_item", config.judges_per_item)
        max_judges = changes.get("max_judges_per_item", config.max_judges_per_item)
        if max_judges < judges:
            judges_label = SETTING_BY_FIELD["judges_per_item"].label
            problems.append(SETTING_BY_FIELD["max_judges_per_item"].problem(
                f"{max_judges} is below judges_per_item ({judges}).", f"{max_judges} is below {judges_label} ({judges})."))
    if problems:
        raise PairSettingsInvalid(problems)
    for field, value in changes.items():
        setattr(config, field, value)
    if changes:
        config.save(update_fields=list(changes))
    return config


@dataclass(frozen=True)
class SettingField:
    """One input of the settings form: its label, the value it shows and the refusals shown beside it."""

    setting: Setting
    value: Any
    errors: list[str]

    @property
    def name(self) -> str:
        return self.setting.field

    @property
    def label(self) -> str:
        return self.setting.label

    @property
    def is_text(self) -> bool:
        return self.setting.kind is str

    @property
    def step(self) -> str:
        return "any" if self.setting.kind is float else "1"

    @property
    def minimum(self) -> str:
        return "" if self.setting.low is None else f"{self.setting.low:g}"

    @property
    def maximum(self) -> str:
        return "" if self.setting.high is None else f"{self.setting.high:g}"

    @property
    def placeholder(self) -> str:
        """A model path left blank falls back to the server's setting of the same name."""
        return f"blank: PAIRS_{self.setting.field.upper()} setting" if self.is_text else ""


def settings_fields(
    config: PairConfig, typed: Mapping[str, str] | None = None, refused: PairSettingsInvalid | None = None
) -> dict[str, SettingField]:
    """The settings form's inputs by field: the saved values, or after a refused save what was typed (every field
    sent), each with its refusals worded with its label."""
    typed = typed or {}
    errors = refused.by_field if refused is not None else {}
    return {
        setting.field: SettingField(
            setting=setting,
            value=typed[setting.field] if setting.field in typed else getattr(config, setting.field),
            errors=errors.get(setting.field, []),
        )
        for setting in SETTINGS
    }
