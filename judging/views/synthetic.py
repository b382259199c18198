"""Synthetic hallucination sets (admins): make a set, follow its rewriting (resume or cancel it), run judges over
it, read the tables.

Thin: forms read the typed values, judging.services.synthetic and runs decide
and write, and a refusal is shown beside the form with nothing written.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect, HttpResponseClientRefresh

from annotate.models import Project
from annotate.services.jobs import CancelRefused
from annotate.uploads import stopped_upload
from judging import access
from judging import synthetic as nesting
from judging.charts import sensitivity_chart
from judging.forms import JudgeRunChoiceForm, WordedForm
from judging.models import Judge, PromptVersion, SyntheticItem, SyntheticRewrite, SyntheticSet
from judging.services import overview
from judging.services.judges import JudgeSettingsError
from judging.services.runs import start_run
from judging.services.synthetic import (
    SyntheticSetError,
    cancel_synthetic_set,
    create_synthetic_set,
    import_rewrites,
    kept_in_words,
    latest_runs,
    output_sentences,
    paper_tables,
    resume_synthetic_set,
    synthetic_summary,
)
from judging.tables import RESIDUAL_COLUMNS

EXAMPLE_OUTPUTS = 2
MAX_IMPORT_BYTES = 20 * 1024 * 1024


class SyntheticSetForm(WordedForm):
    name = forms.CharField(max_length=100)
    writer = forms.ModelChoiceField(queryset=Judge.objects.none(), label="Writer (a rubric judge's endpoint)",
                                    empty_label="Choose a rubric judge")
    seed = forms.IntegerField(min_value=0, initial=0, help_text="Seeds the order in which sentences are replaced.")
    sentences_per_output = forms.IntegerField(
        min_value=1, max_value=20, initial=nesting.DEFAULT_SENTENCES_PER_OUTPUT, required=False,
        label="Sentences per output",
        help_text="Only outputs of exactly this many sentences are used; the sets go from 0 to 100% in steps of one "
                  "sentence (5: 20% steps, as in the paper).")

    def __init__(self, project: Project, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["writer"].queryset = Judge.objects.filter(  # type: ignore[attr-defined]
            project=project, kind=Judge.Kind.RUBRIC)


class SyntheticImportForm(WordedForm):
    name = forms.CharField(max_length=100)
    seed = forms.IntegerField(min_value=0, initial=0)
    sentences_per_output = forms.IntegerField(
        min_value=1, max_value=20, initial=nesting.DEFAULT_SENTENCES_PER_OUTPUT, required=False,
        label="Sentences per output",
        help_text="Only outputs of exactly this many sentences are used; the sets go from 0 to 100% in steps of one "
                  "sentence (5: 20% steps, as in the paper).")
    # Last, so the browser sends the other fields first: an upload stopped for its size (annotate.uploads) keeps them.
    file = forms.FileField(label="Rewrites (JSONL)",
                           help_text='One line per rewrite: {"sample", "sentence", "type", "rewritten"}, '
                                     'and "batch" where the sample id repeats across batches.')


def _per_output(form: forms.Form) -> int:
    """The form's sentences per output; left empty, the default (five, as in the paper)."""
    return form.cleaned_data.get("sentences_per_output") or nesting.DEFAULT_SENTENCES_PER_OUTPUT


def _refuse(form: forms.Form, error: SyntheticSetError | JudgeSettingsError) -> None:
    form.add_error(error.field if error.field in form.fields else None, str(error))


def _render_sets(request: HttpRequest, project: Project, status: int = 200, **bound: Any) -> HttpResponse:
    prompts = {kind: PromptVersion.objects.filter(project=project, kind=kind).order_by("-number").first()
               for kind in nesting.HALLUCINATION_TYPES}
    context = {
        "project": project,
        "sets": SyntheticSet.objects.filter(project=project).select_related("writer", "cancelled_by")
        .order_by("-created_at", "-id"),
        "create_form": bound.get("create_form") or SyntheticSetForm(project),
        "import_form": bound.get("import_form") or SyntheticImportForm(auto_id="import_%s"),
        "prompts": [{"kind": kind, "version": version} for kind, version in prompts.items()],
        "writers": Judge.objects.filter(project=project, kind=Judge.Kind.RUBRIC).exists(),
    }
    return render(request, "judging/synthetic.html", context, status=status)


@require_GET
@login_required
def synthetic_sets(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.get_project_for_judging_admin(request.user, slug)
    return _render_sets(request, project)


@require_POST
@login_required
def synthetic_create(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.get_project_for_judging_admin(request.user, slug)
    form = SyntheticSetForm(project, request.POST)
    if form.is_valid():
        try:
            created = create_synthetic_set(project, name=form.cleaned_data["name"], writer=form.cleaned_data["writer"],
                                           seed=form.cleaned_data["seed"], by=request.user,
                                           sentences_per_output=_per_output(form))
        except SyntheticSetError as error:
            _refuse(form, error)
        else:
            messages.success(request, f"Set {created.name!r} created: {created.total} rewrites queued.")
            return _to_set(request, project, created)
    return _render_sets(request, project, status=400, create_form=form)


@require_POST
@login_required
def synthetic_import(request: HttpRequest, slug: str) -> HttpResponse:
    project = access.get_project_for_judging_admin(request.user, slug)
    form = SyntheticImportForm(request.POST, request.FILES, auto_id="import_%s")  # ids apart from the create form's
    stopped = stopped_upload(request)
    if stopped is not None:  # over FAITHLAB_MAX_UPLOAD_MB: never received, so not "required" but too large
        form.errors.pop("file", None)
        form.add_error("file", stopped.messages)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        if upload.size > MAX_IMPORT_BYTES:
            form.add_error("file", f"{upload.name} is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB")
        else:
            try:
                created = import_rewrites(project, form.cleaned_data["name"], upload.read(), upload.name,
                                          seed=form.cleaned_data["seed"], by=request.user,
                                          sentences_per_output=_per_output(form))
            except SyntheticSetError as error:
                # One message per problem (file, line, field), as many as the service names.
                for problem in error.problems[:20]:
                    form.add_error(error.field if error.field in form.fields else None, problem)
            else:
                messages.success(request, f"Set {created.name!r} imported.")
                return _to_set(request, project, created)
    return _render_sets(request, project, status=400, import_form=form)


def _to_set(request: HttpRequest, project: Project, synthetic_set: SyntheticSet) -> HttpResponse:
    url = reverse("judging-synthetic-set", args=[project.slug, synthetic_set.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


def _residual_rows(residual: dict[str, Any]) -> list[dict[str, Any]]:
    return [{**row, "cells": [{"column": column, "mean": row[column], "pairs": row["pairs"][column]}
                              for column in (*RESIDUAL_COLUMNS, "overall")]} for row in residual["rows"]]


def _examples(synthetic_set: SyntheticSet) -> list[dict[str, Any]]:
    """A few outputs with every version, each sentence marked when it is a rewrite (and in which order)."""
    golds = list(synthetic_set.items.filter(type=SyntheticItem.Type.GOLD).select_related("sample")
                 .order_by("sample_id")[:EXAMPLE_OUTPUTS])
    if not golds:
        return []
    samples = [gold.sample_id for gold in golds]
    written: dict[tuple[int, str], dict[int, str]] = defaultdict(dict)
    for rewrite in synthetic_set.rewrites.filter(sample_id__in=samples, status=SyntheticRewrite.Status.OK):
        written[(rewrite.sample_id, rewrite.type)][rewrite.sentence_index] = rewrite.rewritten
    versions: dict[int, list[SyntheticItem]] = defaultdict(list)
    for item in synthetic_set.items.filter(sample_id__in=samples).exclude(type=SyntheticItem.Type.GOLD):
        versions[item.sample_id].append(item)
    examples = []
    for gold in golds:
        spans = output_sentences(gold.sample)
        rows = [{"type": "gold", "percent": 0, "replaced": [], "pieces": [{"text": gold.text, "order": None}]}]
        for item in versions[gold.sample_id]:
            pieces = nesting.marked_pieces(gold.text, spans, written[(gold.sample_id, item.type)], item.replaced)
            rows.append({"type": item.type, "percent": item.percent, "replaced": item.replaced, "pieces": pieces})
        examples.append({"sample": gold.sample, "source": gold.sample.passage.text, "versions": rows})
    return examples


@require_GET
@login_required
def synthetic_set_page(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The set: progress (the htmx poll gets only that part), examples, the three tables and the chart."""
    synthetic_set = access.get_synthetic_set_for_admin(request.user, slug, pk)
    project = synthetic_set.project
    if request.htmx:
        return _poll(request, synthetic_set)
    tables = paper_tables(synthetic_set)
    context = {
        "project": project,
        "set": synthetic_set,
        "summary": synthetic_summary(synthetic_set),
        "examples": _examples(synthetic_set),
        "tables": tables,
        # The runs' lines (judging/_run.html) read the runs themselves: cancelled by whom, cancellable.
        "set_runs": latest_runs(synthetic_set),
        "residual_rows": _residual_rows(tables["residual"]),
        "chart": sensitivity_chart(tables["sensitivity"]),
        "run_form": JudgeRunChoiceForm(project).judging("synthetic item"),
        "run_items": overview.synthetic_run_size(synthetic_set),
    }
    return render(request, "judging/synthetic_set.html", context)


def _poll(request: HttpRequest, synthetic_set: SyntheticSet) -> HttpResponse:
    """What the progress element's poll gets: the element alone, swapped inside its role="status" wrapper (which
    stays on the page, so a screen reader hears each change in one place); from the set's own page (?on=page) with
    the "What the set holds" card out of band, so its counts move with the progress. Once the set has ended the
    element carries a link that shows the items and tables (made when the set is done) by loading the page again:
    not a reload by itself, which would replace the live region under a screen reader."""
    on_page = request.GET.get("on") == "page"
    context = {"project": synthetic_set.project, "set": synthetic_set, "on_page": on_page, "polled": True}
    progress = render(request, "judging/_synthetic_progress.html#progress", context)
    if not on_page:
        return progress
    summary = render(request, "judging/synthetic_set.html#set-summary",
                     {**context, "summary": synthetic_summary(synthetic_set), "oob": True})
    return HttpResponse(progress.content + summary.content)


@require_POST
@login_required
def synthetic_run(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Start a run of a judge over the set's items (each judge's latest run feeds the tables)."""
    synthetic_set = access.get_synthetic_set_for_admin(request.user, slug, pk)
    project = synthetic_set.project
    form = JudgeRunChoiceForm(project, request.POST)
    if form.is_valid():
        try:
            run = start_run(project, form.cleaned_data["judge"], scope="synthetic", synthetic_set=synthetic_set,
                            by=request.user, ask_again=form.cleaned_data.get("ask_again", False))
        except JudgeSettingsError as error:
            _refuse(form, error)
        else:
            messages.success(request, f"Run {run.pk} of {run.judge.name} over the set queued.")
            return _to_set(request, project, synthetic_set)
    for problem in form.errors.get("__all__", []) + form.errors.get("judge", []):
        messages.error(request, f"No run started: {problem}")
    return _to_set(request, project, synthetic_set)


@require_POST
@login_required
def synthetic_resume(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Queue the set again: what is missing is written, and with retry_failed the failed rewrites are asked again."""
    synthetic_set = access.get_synthetic_set_for_admin(request.user, slug, pk)
    try:
        resume_synthetic_set(synthetic_set, retry_failed=request.POST.get("retry_failed") == "1")
    except SyntheticSetError as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Set {synthetic_set.name!r} queued again.")
    return _to_set(request, synthetic_set.project, synthetic_set)


@require_POST
@login_required
def synthetic_cancel(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a queued or running set (admins), back to the set's page (an htmx form, on the set's page or in the
    sets list, reloads the page it is on, with the message).

    The way out of a set no worker writes, which would otherwise say "Queued" for good. A set that has already
    ended is left as it is, with a message saying how it ended.
    """
    synthetic_set = access.get_synthetic_set_for_admin(request.user, slug, pk)
    try:
        cancel_synthetic_set(synthetic_set, request.user)
    except CancelRefused as refusal:
        messages.error(request, f"Not cancelled: {refusal}")
    else:
        messages.success(request, f"Set {synthetic_set.name!r} is cancelled: it asks the writer for nothing more, "
                                  f"even if a worker picks it up; {kept_in_words(synthetic_set)}, and Resume goes on "
                                  "from there.")
    if request.htmx:
        return HttpResponseClientRefresh()
    return HttpResponseRedirect(reverse("judging-synthetic-set", args=[slug, synthetic_set.pk]))


urlpatterns = [
    path("projects/<slug:slug>/synthetic/", synthetic_sets, name="judging-synthetic"),
    path("projects/<slug:slug>/synthetic/new/", synthetic_create, name="judging-synthetic-create"),
    path("projects/<slug:slug>/synthetic/import/", synthetic_import, name="judging-synthetic-import"),
    path("projects/<slug:slug>/synthetic/<int:pk>/", synthetic_set_page, name="judging-synthetic-set"),
    path("projects/<slug:slug>/synthetic/<int:pk>/runs/", synthetic_run, name="judging-synthetic-run"),
    path("projects/<slug:slug>/synthetic/<int:pk>/resume/", synthetic_resume, name="judging-synthetic-resume"),
    path("projects/<slug:slug>/synthetic/<int:pk>/cancel/", synthetic_cancel, name="judging-synthetic-cancel"),
]
