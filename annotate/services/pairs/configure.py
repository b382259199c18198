"""Changing a pairs project's settings (judges per item, spammer rules, perturbation, models), all or nothing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from annotate.models import PairConfig, Project
from annotate.services.pairs.config import get_config


class PairSettingsInvalid(ValueError):
    """One message per bad field, naming it; nothing was saved."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(" ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Setting:
    field: str
    kind: Callable[[str], Any]  # int, float or str
    low: float | None = None
    high: float | None = None
    low_open: bool = False  # True: the value must be strictly above `low`


# The form's fields; a field missing from the submitted values keeps its current value.
SETTINGS = [
    Setting("judges_per_item", int, 1, 50),
    Setting("max_judges_per_item", int, 1, 50),
    Setting("min_judgements", int, 1, 10_000),
    Setting("spam_min_mean_seconds", float, 0, 3600),
    Setting("spam_max_disagreement", float, 0, 1),
    Setting("serve_minutes", int, 1, 1440),
    Setting("context_sentences", int, 0, 100),
    Setting("mask_ratio", float, 0, 1, low_open=True),
    Setting("top_k", int, 1, 1000),
    Setting("temperature", float, 0, 100, low_open=True),
    Setting("candidates", int, 1, 200),
    Setting("min_counts", int, 1, 100_000),
    Setting("masked_lm", str),
    Setting("causal_lm", str),
    Setting("spacy_pipeline", str),
    Setting("encoder", str),
]


def _read(setting: Setting, raw: str) -> tuple[Any, str | None]:
    raw = raw.strip()
    if setting.kind is str:
        return raw, None if len(raw) <= 500 else f"{setting.field}: at most 500 characters."
    try:
        value = setting.kind(raw)
    except ValueError:
        kind = "a whole number" if setting.kind is int else "a number"
        return None, f"{setting.field}: {raw!r} is not {kind}."
    if setting.low is not None and (value < setting.low or (setting.low_open and value == setting.low)):
        bound = "above" if setting.low_open else "at least"
        return None, f"{setting.field}: {raw} must be {bound} {setting.low:g}."
    if setting.high is not None and value > setting.high:
        return None, f"{setting.field}: {raw} must be at most {setting.high:g}."
    return value, None


def update_pair_settings(project: Project, values: Mapping[str, str]) -> PairConfig:
    """Check every submitted setting, then save them together; raise PairSettingsInvalid naming each bad one."""
    config = get_config(project)
    problems: list[str] = []
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
            problems.append(f"max_judges_per_item: {max_judges} is below judges_per_item ({judges}).")
    if problems:
        raise PairSettingsInvalid(problems)
    for field, value in changes.items():
        setattr(config, field, value)
    if changes:
        config.save(update_fields=list(changes))
    return config
