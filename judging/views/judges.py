"""The judges page of a span project (admins): judges, triage settings, runs with live progress, the prompt editor.

Thin: forms turn the typed text into values, the services decide and write,
and a refusal is shown beside the field it names with nothing written. While a
run in the list is queued or running, the list polls the page, which answers
htmx with the list alone: runs started by a finished one (a triage's explainer)
appear without a reload.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotate.models import Project
from judging import access, prompts
from judging.confirm import triage_question
from judging.forms import (
    JUDGE_FORMS,
    PROMPT_KINDS,
    PromptForm,
    StartRunForm,
    StartTriageForm,
    TriageSettingsForm,
    edit_form,
    judge_settings,
)
from judging.models import Judge, PromptVersion
from judging.services import overview
from judging.services.judges import (
    JudgeSettingsError,
    PromptRefused,
    check_judge_update,
    check_new_judge,
    create_judge,
    judging_settings,
    save_prompt,
    update_judge,
    update_judging_settings,
)
from judging.services.runs import start_or_reuse_run
from judging.services.triage import explainer_to_run, first_pass_refusal, start_triage
from judging.views.exports import export_context


def _refusal_on_form(form: forms.Form, error: JudgeSettingsError) -> None:
    """Put a service's refusals beside the fields they name (every one), or above the form for a field it lacks."""
    for field, refusals in error.problems.items():
        if field == "api_key_env" and "api_key_env" in form.fields:
            # Refused because it looks like a key pasted where the variable's name belongs: never send it back.
            form.data = form.data.copy()
            form.data[form.add_prefix("api_key_env")] = ""
        for message in refusals:
            form.add_error(field if field in form.fields else None, message)


def _add_problems(form: forms.Form, problems: dict[str, list[str]]) -> None:
    """A service's problems for fields the form has not refused already."""
    fresh = {field: messages for field, messages in problems.items() if field not in form.errors}
    if fresh:
        _refusal_on_form(form, JudgeSettingsError.of(fresh))


def _latest_prompt(project: Project, kind: str) -> PromptVersion | None:
    # Read without creating: version 1 is made from the default text on first use (judging.services.judges).
    return PromptVersion.objects.filter(project=project, kind=kind).order_by("-number").first()


def _render_judges(request: HttpRequest, project: Project, status: int = 200, **bound: Any) -> HttpResponse:
    """The judges page; ``bound`` holds the forms that came back with errors, to be shown as they were typed."""
    settings = judging_settings(project)
    rows = overview.judge_rows(project)
    settings_initial = {
        "first_pass": settings.first_pass_id, "explainer": settings.explainer_id,
        "llm_flag_at_most": settings.llm_flag_at_most, "nli_flag_below": settings.nli_flag_below,
        "blind_by_default": settings.blind_by_default, "audits_per_item": settings.audits_per_item,
    }
    edit_forms = bound.get("edit_forms", {})
    opened = bound.get("open", "")
    sizes = overview.scope_sizes(project)
    context = {
        "project": project,
        "judges": [
            {"row": row, "open": opened == f"judge-{row.judge.pk}", "edit_form": edit_forms.get(row.judge.pk)
             or (edit_form(row.judge) if row.judge.kind in JUDGE_FORMS else None)}
            for row in rows
        ],
        **_runs_context(project),
        "rubric_form": bound.get("rubric_form") or JUDGE_FORMS[Judge.Kind.RUBRIC](prefix="rubric"),
        "nli_form": bound.get("nli_form") or JUDGE_FORMS[Judge.Kind.NLI](prefix="nli"),
        "settings_form": bound.get("settings_form") or TriageSettingsForm(project, initial=settings_initial),
        "run_form": (bound.get("run_form") or StartRunForm(project)).show_sizes(sizes),
        "triage_form": (bound.get("triage_form") or StartTriageForm(project)).show_sizes(sizes),
        "triage_question": triage_question(settings, explainer_to_run(settings)),
        "triage_refusal": first_pass_refusal(settings),
        "settings": settings,
        "rubric": _latest_prompt(project, PromptVersion.Kind.RUBRIC),
        "open": opened,
        **export_context(project),
    }
    return render(request, "judging/judges.html", context, status=status)


def _runs_context(project: Project) -> dict[str, Any]:
    """The latest runs, and whether the list must keep polling (some run is still queued or running)."""
    runs = overview.recent_runs(project)
    return {"runs": runs, "runs_active": any(run.is_active for run in runs)}


def _back(project: Project, anchor: str = "", request: HttpRequest | None = None) -> HttpResponse:
    """Back to the page; an htmx form (one asked to confirm first: Start run, Start triage) is sent there whole.

    Without the anchor for htmx: the browser is on the page already, and a new location that differs from it only
    by its #anchor would merely scroll, not load the page with its message and the new run.
    """
    url = reverse("judging-judges", args=[project.slug])
    if request is not None and request.htmx:
        return HttpResponseClientRedirect(url)
    return HttpResponseRedirect(url + (f"#{anchor}" if anchor else ""))


@require_GET
@login_required
def judges_page(request: HttpRequest, slug: str) -> HttpResponse:
    """The page; an htmx request (the runs list polling itself) gets only the list."""
    project = access.get_project_for_judging_admin(request.user, slug)
    if request.htmx:
        return render(request, "judging/judges.html#runs", {"project": project, **_runs_context(project)})
    return _render_judges(request, project)


@require_POST
@login_required
def judge_create(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    project = access.get_project_for_judging_admin(request.user, slug)
    if kind not in JUDGE_FORMS:
        raise Http404("No such kind of judge")
    form = JUDGE_FORMS[kind](request.POST, prefix=kind)
    if form.is_valid():
        try:
            judge = create_judge(project, name=form.cleaned_data["name"], kind=kind, by=request.user,
                                 **judge_settings(form))
        except JudgeSettingsError as error:
            _refusal_on_form(form, error)
        else:
            messages.success(request, f"Judge {judge.name} created.")
            return _back(project, "judges")
    else:  # the service's checks of the fields the form accepted too, so every problem shows at once
        accepted = dict(form.cleaned_data)
        _, more = check_new_judge(project, name=accepted.pop("name", None), kind=kind, settings=accepted,
                                  refused=set(form.errors), by=request.user)
        _add_problems(form, more)
    return _render_judges(request, project, status=400, **{f"{kind}_form": form, "open": f"new-{kind}"})


@require_POST
@login_required
def judge_update(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    judge = access.get_judge_for_admin(request.user, slug, pk)
    if judge.kind not in JUDGE_FORMS:
        raise Http404("Imported judges have no settings to change")
    form = edit_form(judge, request.POST)
    if form.is_valid():
        try:
            update_judge(judge, name=form.cleaned_data["name"], by=request.user, **judge_settings(form))
        except JudgeSettingsError as error:
            _refusal_on_form(form, error)
        else:
            messages.success(request, f"Judge {judge.name} saved.")
            return _back(judge.project, "judges")
    else:  # as judge_create: the service's checks of what the form accepted, beside the form's own
        _, more = check_judge_update(judge, dict(form.cleaned_data), refused=set(form.errors), by=request.user)
        _add_problems(form, more)
    judge.refresh_from_db()  # the list shows what is stored, the form what was typed
    return _render_judges(request, judge.project, status=400, edit_forms={judge.pk: form}, open=f"judge-{judge.pk}")


@require_POST
@login_required
def settings_update(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.get_project_for_judging_admin(request.user, slug)
    form = TriageSettingsForm(project, request.POST)
    if form.is_valid():
        try:
            update_judging_settings(project, **form.cleaned_data)
        except JudgeSettingsError as error:
            _refusal_on_form(form, error)
        else:
            messages.success(request, "Triage settings saved.")
            return _back(project, "triage")
    return _render_judges(request, project, status=400, settings_form=form)


@require_POST
@login_required
def run_start(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.get_project_for_judging_admin(request.user, slug)
    form = StartRunForm(project, request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            # A second click (or a resent form) while the same run is still queued or running starts nothing.
            run, started = start_or_reuse_run(project, data["judge"], scope=data["scope"],
                                              batch=data["batch"] if data["scope"] == "batch" else None,
                                              by=request.user, ask_again=data.get("ask_again", False))
        except JudgeSettingsError as error:
            _refusal_on_form(form, error)
        else:
            if started:
                messages.success(request, f"Run {run.pk} of {run.judge.name} queued.")
            else:
                messages.info(request, f"Run {run.pk} of {run.judge.name} over the same outputs is still {run.status}: "
                                       "no second run was started.")
            return _back(project, "runs", request)
    return _render_judges(request, project, status=400, run_form=form)


@require_POST
@login_required
def triage_start(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.get_project_for_judging_admin(request.user, slug)
    form = StartTriageForm(project, request.POST)
    if form.is_valid():
        try:
            run = start_triage(project, batch=form.cleaned_data["batch"], by=request.user)
        except JudgeSettingsError as error:
            _refusal_on_form(form, error)
        else:
            messages.success(request, f"Triage started: first pass run {run.pk} of {run.judge.name}.")
            return _back(project, "runs", request)
    return _render_judges(request, project, status=400, triage_form=form)


@require_http_methods(["GET", "POST"])
@login_required
def prompt_page(request: HttpRequest, slug: str, kind: str) -> HttpResponse:
    """A prompt's editor and its versions; saving a changed text makes a new version (runs keep theirs)."""
    project = access.get_project_for_judging_admin(request.user, slug)
    if kind not in PROMPT_KINDS:
        raise Http404("No such prompt")
    latest = _latest_prompt(project, kind)
    refused = ""
    status = 200
    if request.method == "POST":
        form = PromptForm(request.POST)
        if form.is_valid():
            try:
                saved = save_prompt(project, kind, form.cleaned_data["text"], by=request.user,
                                    note=form.cleaned_data["note"])
            except PromptRefused as error:
                refused = str(error)
            else:
                if latest is not None and saved.pk == latest.pk:
                    messages.info(request, f"The text is unchanged: still version {saved.number}.")
                else:
                    messages.success(request, f"Saved as version {saved.number}.")
                return HttpResponseRedirect(reverse("judging-prompt", args=[project.slug, kind]))
        status = 400
        latest = _latest_prompt(project, kind)  # what is stored now: a refused save wrote nothing
    else:
        form = PromptForm(initial={"text": latest.text if latest else prompts.default_prompt(kind)})
    versions = PromptVersion.objects.filter(project=project, kind=kind).select_related("created_by").order_by("-number")
    return render(
        request,
        "judging/judges_prompt.html",
        {
            "project": project, "kind": kind, "kind_label": PromptVersion.Kind(kind).label, "form": form,
            "latest": latest, "versions": versions, "refused": refused,
        },
        status=status,
    )


urlpatterns = [
    path("projects/<slug:slug>/judges/", judges_page, name="judging-judges"),
    path("projects/<slug:slug>/judges/new/<str:kind>/", judge_create, name="judging-judge-create"),
    path("projects/<slug:slug>/judges/<int:pk>/edit/", judge_update, name="judging-judge-update"),
    path("projects/<slug:slug>/judges/settings/", settings_update, name="judging-settings"),
    path("projects/<slug:slug>/judges/runs/new/", run_start, name="judging-run-start"),
    path("projects/<slug:slug>/judges/triage/", triage_start, name="judging-triage-start"),
    path("projects/<slug:slug>/judges/prompts/<str:kind>/", prompt_page, name="judging-prompt"),
]
