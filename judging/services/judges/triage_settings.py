"""The project's triage settings (which judges flag, at what score or p, how many audits an item gets): read,
made with the defaults on first use, and changed after every field is checked."""

from __future__ import annotations

from typing import Any

from annotate.models import Project
from judging.labels import setting_label
from judging.models import Judge, JudgingSettings
from judging.services.judges.validation import JudgeSettingsError, checked_number, in_range


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
            cleaned[field] = in_range(field, value, 1, 5, integer=True)
        elif field == "nli_flag_below":
            cleaned[field] = in_range(field, value, 0, 1, integer=False)
        elif field == "blind_by_default":
            if not isinstance(value, bool):
                raise JudgeSettingsError(field, f"{setting_label(field)} must be true or false, not {value!r}.")
            cleaned[field] = value
        elif field == "audits_per_item":
            cleaned[field] = in_range(field, value, 1, 20, integer=True)
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
        judge = Judge.objects.filter(pk=int(checked_number(field, value, integer=True))).first()
    if judge is None or judge.project_id != project.pk:
        raise JudgeSettingsError(field, f"{setting_label(field)} must be a judge of this project.")
    # Imported judges are allowed in both places (teams that ran their judges elsewhere triage with them);
    # start_triage refuses to *run* an imported first pass, and an imported explainer is never run.
    if field == "explainer" and judge.kind == Judge.Kind.NLI:
        raise JudgeSettingsError(field, "The explainer must be a rubric LLM judge with reasoning (it explains).")
    if field == "explainer" and judge.kind == Judge.Kind.RUBRIC and not judge.with_reasoning:
        raise JudgeSettingsError(field, "The explainer must be a rubric LLM judge with reasoning (it explains).")
    return judge
