"""Creating and changing a project's judges: checked whole first (every refusal at once), then written; and the
`judge` command's judge for an endpoint, made when there is none."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from django.db import IntegrityError, transaction

from annotate.models import Project
from judging.clients.chat.allowed import host_refusal
from judging.labels import setting_label
from judging.models import Judge
from judging.services.judges.validation import (
    NLI_SETTINGS,
    RUBRIC_SETTINGS,
    JudgeSettingsError,
    add_problems,
    clean_each,
    clean_judge_settings,
    completeness_problems,
)


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


def hosts_limited(by: Any) -> bool:
    """Whether ``by`` (who saves a judge) may point it only at public hosts and FAITHLAB_JUDGE_HOSTS, and give an NLI
    judge only a cached model id or a directory inside FAITHLAB_NLI_MODEL_DIRS: a user who is not site staff (a
    project admin). None is an operator (a management command, the shell): any host, any directory."""
    return by is not None and not (getattr(by, "is_staff", False) or getattr(by, "is_superuser", False))


def _host_problems(base_url: Any, by: Any) -> dict[str, list[str]]:
    """The refusal of a base URL whose host ``by`` may not use (judging.clients.chat.allowed.host_refusal)."""
    if not base_url or not hosts_limited(by):
        return {}
    refusal = host_refusal(base_url)
    return {"base_url": [refusal]} if refusal else {}


def check_new_judge(
    project: Project, *, name: Any, kind: Any, settings: dict[str, Any], refused: Collection[str] = (), by: Any = None
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """A judge to be created, checked whole: its cleaned name and settings, and every problem, field -> messages.

    ``refused`` names fields a caller has refused already (an API request's types and ranges): they are not
    checked again, nor reported missing, so one answer can list every field's problem. ``by``: who creates it, for
    the hosts its base URL and the folders its NLI model path may name (hosts_limited). Nothing is written.
    """
    cleaned: dict[str, Any] = {}
    problems: dict[str, list[str]] = {}
    if "name" not in refused:
        try:
            cleaned["name"] = _clean_name(project, name)
        except JudgeSettingsError as error:
            add_problems(problems, error.problems)
    if "kind" not in refused:
        settings_cleaned, settings_problems = clean_each(kind, {f: v for f, v in settings.items() if f not in refused},
                                                         limited=hosts_limited(by))
        cleaned |= settings_cleaned
        add_problems(problems, settings_problems)
        if "kind" not in settings_problems:
            add_problems(problems, completeness_problems(kind, settings_cleaned, skip={*refused, *settings_problems}))
        if kind == Judge.Kind.RUBRIC:
            add_problems(problems, _host_problems(settings_cleaned.get("base_url"), by))
    return cleaned, problems


def create_judge(project: Project, *, name: str, kind: str, by: Any = None, **settings: Any) -> Judge:
    """A new judge of the project, after checking every setting (all refusals at once); nothing is written then.
    ``by``: who creates it (kept as its creator; a project admin who is not site staff may name public hosts only)."""
    cleaned, problems = check_new_judge(project, name=name, kind=kind, settings=settings, by=by)
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
    judge: Judge, settings: dict[str, Any], *, refused: Collection[str] = (), by: Any = None
) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Changes to a judge's settings (and ``name``), checked whole: the cleaned changes and every problem.

    ``refused``: fields a caller has refused already (a form's types and ranges), neither checked again nor
    counted as changed. ``by``: who changes it; a new base URL or NLI model path is checked for the hosts and
    folders they may use (hosts_limited), the judge's own one is kept (a project admin may edit a judge site staff
    pointed at a local server or a model elsewhere). Nothing is written.
    """
    settings = {field: value for field, value in settings.items() if field not in refused}
    name = settings.pop("name", None)
    new_path = str(settings.get("nli_model_path") or "").strip() not in ("", judge.nli_model_path)
    cleaned, problems = clean_each(judge.kind, settings, limited=new_path and hosts_limited(by))
    merged = {field: getattr(judge, field) for field in (*RUBRIC_SETTINGS, *NLI_SETTINGS)} | cleaned
    add_problems(problems, completeness_problems(judge.kind, merged, skip={*refused, *problems}))
    if judge.kind == Judge.Kind.RUBRIC and cleaned.get("base_url", judge.base_url) != judge.base_url:
        add_problems(problems, _host_problems(cleaned["base_url"], by))
    if name is not None:
        try:
            cleaned["name"] = _clean_name(judge.project, name, exclude=judge.pk)
        except JudgeSettingsError as error:
            add_problems(problems, error.problems)
    return cleaned, problems


def update_judge(judge: Judge, *, by: Any = None, **settings: Any) -> Judge:
    """Change some settings (and the name) of a judge; all are checked before any is saved (every refusal at once).
    ``by``: who changes it (check_judge_update)."""
    cleaned, problems = check_judge_update(judge, settings, by=by)
    if problems:
        raise JudgeSettingsError.of(problems)
    for field, value in cleaned.items():
        setattr(judge, field, value)
    if cleaned:
        judge.save(update_fields=list(cleaned))
    return judge


# The settings the `judge` command may give an existing judge for its endpoint, model and mode.
ENDPOINT_JUDGE_SETTINGS = ("api_key_env", "concurrency", "price_input_per_mtok", "price_output_per_mtok")


def find_endpoint_judge(project: Project, *, base_url: str, model: str, with_reasoning: bool) -> Judge | None:
    """The project's rubric judge for this endpoint (cleaned: clean_base_url), model and mode, or None."""
    return Judge.objects.filter(
        project=project, kind=Judge.Kind.RUBRIC, base_url=base_url, model=model, with_reasoning=with_reasoning,
    ).order_by("pk").first()


def endpoint_judge_changes(judge: Judge, given: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """What ``given`` (cleaned settings) would change on ``judge``: field -> (now, given), ENDPOINT_JUDGE_SETTINGS
    only (endpoint, model and mode are what found the judge)."""
    return {field: (getattr(judge, field), given[field]) for field in ENDPOINT_JUDGE_SETTINGS
            if field in given and getattr(judge, field) != given[field]}


def changes_refused(judge: Judge, changes: dict[str, tuple[Any, Any]], option_of: dict[str, str]) -> str:
    """The refusal of settings that would change an existing (shared) judge without --update, naming the judge,
    each setting (as the command's option) with its value now and the one given."""
    listed = "; ".join(f"{option_of.get(field, field)} {_shown(now)} -> {_shown(given)}"
                       for field, (now, given) in changes.items())
    return (f"judge {judge.name!r} (id {judge.pk}) already exists for this endpoint, model and mode, with other "
            f"settings: {listed}. It is the project's judge, used by its pages, its triage and every later run, so it "
            "is not changed unless you say so: add --update to change it, or leave those options out to run it "
            "with its settings. Nothing was written.")


def _shown(value: Any) -> str:
    """A setting's value in a refusal: a price not known (null) as "not known", no key variable as "none"."""
    if value is None:
        return "not known"
    if value == "":
        return "none"
    return repr(value) if isinstance(value, str) else f"{value:g}"


def endpoint_judge(
    project: Project,
    *,
    base_url: str,
    model: str,
    api_key_env: str | None = None,
    with_reasoning: bool = True,
    concurrency: int | None = None,
    prices: dict[str, float] | None = None,
    by: Any = None,
    update: bool = False,
) -> Judge:
    """The project's rubric judge for this endpoint, model and mode, created when there is none (the `judge` command).

    For an existing judge, an api_key_env, concurrency or price (``prices``: price_input_per_mtok and/or
    price_output_per_mtok, US$ per million tokens) other than its own is refused (JudgeSettingsError on
    ``update``: the judge is shared by the project's pages and runs) unless ``update``, which saves them. A
    setting left out (None) keeps the judge's; a new judge gets the defaults (no key variable, concurrency 4).
    """
    values: dict[str, Any] = {"base_url": base_url, "model": model, "with_reasoning": with_reasoning,
                              **(prices or {})}
    if api_key_env is not None:
        values["api_key_env"] = api_key_env
    if concurrency is not None:
        values["concurrency"] = concurrency
    cleaned = clean_judge_settings(Judge.Kind.RUBRIC, values)
    found = find_endpoint_judge(project, base_url=cleaned["base_url"], model=cleaned["model"],
                                with_reasoning=with_reasoning)
    if found is not None:
        changes = endpoint_judge_changes(found, cleaned)
        if changes and not update:
            raise JudgeSettingsError("update", changes_refused(found, changes, {}))
        return update_judge(found, **{field: given for field, (_, given) in changes.items()}) if changes else found
    mode = "reasoning" if with_reasoning else "score only"
    base = f"{cleaned['model'][: 100 - len(mode) - 10]} ({mode})"
    name, number = base, 1
    while Judge.objects.filter(project=project, name=name).exists():  # the same model on another endpoint
        number += 1
        name = f"{base} #{number}"
    return create_judge(project, name=name, kind=Judge.Kind.RUBRIC, by=by, **cleaned)
