"""The round wizard (preview the funnel, then create the round) and a round's page, for a pairs project's admins."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, trigger_client_event

from annotate import access
from annotate.models import Job, PairItem, PairOriginal, PairRound, Project
from annotate.percent import share_text
from annotate.services.pairs import agreement, rounds, vectors
from annotate.services.pairs.overview import sees_figures

# What the wizard offers before anyone changes a field (the seed: a fresh one per visit, see read_round_form).
DEFAULTS = {
    "size": str(rounds.DEFAULT_SIZE),
    "low": f"{rounds.DEFAULT_LOW:g}",
    "high": f"{rounds.DEFAULT_HIGH:g}",
    "paraphrase_max": f"{rounds.DEFAULT_PARAPHRASE_MAX:g}",
    "drop_fraction": f"{rounds.DEFAULT_DROP_FRACTION:g}",
    "seed": "",
}

# The subsampling action in words, beside the ratio's own reason sentence.
ACTIONS = {
    "keep_share_of_h": "Keep a share R of the items predicted H and every item predicted N.",
    "keep_share_of_n": "Keep every item predicted H and a share 1/R of the items predicted N.",
    "no_subsampling_gamma_half": "No subsampling: keep every item.",
    "keep_no_h": "Keep no item predicted H and every item predicted N.",
    "keep_all": "Keep every item: no subsampling balances the classes.",
    "random_too_few": "Draw at random: too few labelled items to compute R.",
    "random_undefined": "Draw at random: R is undefined.",
}
# Funnel steps and the filters an item passed, by their codes in annotate.services.pairs.rounds.
STEPS = {
    rounds.POOL: "Pool",
    rounds.BAND: "After the P(H) band",
    rounds.PARAPHRASE: "After the paraphrase filter",
    rounds.DATE_NAME: "After the date/name filter",
    rounds.SUBSAMPLING: "After subsampling",
    rounds.SELECTED: "Drawn",
}
FILTERS = {
    rounds.BAND: "the P(H) band",
    rounds.PARAPHRASE: "the paraphrase filter",
    rounds.DATE_NAME: "the date/name swap filter",
    rounds.SUBSAMPLING: "the subsampling",
}
ITEMS_PER_PAGE = 100
# The filters of a round drawn by the detector; round 1 is drawn at random and takes none of them.
FILTER_FIELDS = ("low", "high", "paraphrase_max", "drop_fraction")


@dataclass(frozen=True)
class WizardField:
    """One field of the wizard: its label, as the page shows it and as its messages name it, and its bounds."""

    label: str
    low: str
    high: str | None = None
    fraction: bool = True  # any decimal (step="any"); False: whole numbers
    help: str = ""


WIZARD_FIELDS = {
    "size": WizardField("Items to draw", "1", fraction=False),
    "low": WizardField("Lowest P(H) kept", "0", "1"),
    "high": WizardField("Highest P(H) kept", "0", "1"),
    "paraphrase_max": WizardField("Paraphrase threshold", "-1", "1",
                                  help="an item whose span similarity is above it is dropped as a paraphrase"),
    "drop_fraction": WizardField("Share of date/name swaps dropped", "0", "1"),
    "seed": WizardField("Seed", "0", fraction=False, help="blank: a new one"),
}
# Sent with the span-vector section's answer once no vector job runs: the wizard's form previews again.
VECTORS_FINISHED_EVENT = "span-vectors-finished"


@dataclass
class RoundForm:
    """The wizard's fields as typed (to show them again) and as numbers (to call the service), with problems."""

    values: dict[str, str]
    parameters: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def _number(form: RoundForm, name: str, kind: type, low: float, high: float | None) -> None:
    raw = form.values[name].strip()
    try:
        value = kind(raw)
    except ValueError:
        form.errors[name] = f"{raw!r} is not {'a whole number' if kind is int else 'a number'}"
        return
    if value < low or (high is not None and value > high):
        form.errors[name] = (f"{raw} is not between {low:g} and {high:g}" if high is not None
                             else f"{raw} is below {low:g}")
        return
    form.parameters[name] = value


def read_round_form(data: QueryDict, *, fresh_seed: bool = False, random_draw: bool = False) -> RoundForm:
    """The wizard's fields from the request; a first visit gets a fixed random seed, so that the round created
    draws exactly the items the preview showed.

    ``random_draw`` (round 1): the filter fields are not read, since the wizard does not show them and a random
    draw applies none; a stale value in the URL cannot then fail a form with no such field."""
    defaults = {**DEFAULTS, "seed": str(secrets.randbelow(2**31))} if fresh_seed else DEFAULTS
    form = RoundForm({name: default if random_draw and name in FILTER_FIELDS else data.get(name, default)
                      for name, default in defaults.items()})
    _number(form, "size", int, 1, None)
    for name in ("low", "high", "drop_fraction"):
        _number(form, name, float, 0, 1)
    _number(form, "paraphrase_max", float, -1, 1)  # a cosine similarity
    if "low" in form.parameters and "high" in form.parameters and form.parameters["low"] > form.parameters["high"]:
        form.errors["high"] = f"{form.values['high']} is below the lowest P(H) kept ({form.values['low']})"
        del form.parameters["high"]
    if form.values["seed"].strip():
        _number(form, "seed", int, 0, 2**63 - 1)
    else:
        form.parameters["seed"] = None
    return form


def wizard_fields(form: RoundForm, *, round_one: bool) -> list[dict[str, Any]]:
    """The fields the wizard shows (round 1: no filter), each with its value as typed and its problem, if any."""
    return [
        {"name": name, "spec": spec, "value": form.values[name], "error": form.errors.get(name, "")}
        for name, spec in WIZARD_FIELDS.items()
        if not (round_one and name in FILTER_FIELDS)
    ]


def _empty_project(project: Project, plan: Any) -> dict[str, int] | None:
    """When a refused plan comes from a project without any item yet: how many imported texts wait to be perturbed
    (the wizard then links to the import and the perturbation, not to rounds)."""
    if plan is None or plan.refusal is None or PairItem.objects.filter(project=project).exists():
        return None
    return {"originals": PairOriginal.objects.filter(project=project).count()}


def _pairs_project(request: HttpRequest, slug: str, *, admin: bool) -> tuple[Project, str]:
    project, role = access.get_pairs_project_for_user(request.user, slug, admin=admin)
    if not sees_figures(role):
        raise access.Forbidden("Annotators work blind: rounds are for the project's admins and reviewers")
    return project, role


def funnel_rows(funnel: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The funnel's steps with each count as a percentage of the first (the pool), for the bars."""
    if not funnel:
        return []
    top = max(int(funnel[0].get("count") or 0), 1)
    return [{**step, "name": STEPS.get(step.get("step", ""), step.get("step", "")),
             "percent": round(100 * int(step.get("count") or 0) / top)} for step in funnel]


def ratio_context(ratio: dict[str, Any] | None) -> dict[str, Any] | None:
    """The subsampling panel's figures: the stored or previewed ratio, with its action in words."""
    if not ratio:
        return None
    return {**ratio, "action_words": ACTIONS.get(ratio.get("action", ""), ratio.get("action", ""))}


@require_http_methods(["GET", "POST"])
@login_required
def round_new(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the wizard with a preview of the funnel (the preview alone for htmx). POST: start the round's job.

    The round is drawn by a background job (it trains the detector, and first computes the span vectors still
    missing); a refusal the preview can already see (too few labelled items, an empty pool) is shown at once
    and starts nothing. So is one of a second admin's: another round job is queued or running, or the round
    the form showed (its hidden ``number``) was created meanwhile; the fields stay as typed.
    """
    project, _ = _pairs_project(request, slug, admin=True)
    number = rounds.next_round_number(project)
    if request.method == "GET" and request.htmx and request.htmx.target == "span-vectors":
        return _span_vectors_section(request, project, number)
    data = request.POST if request.method == "POST" else request.GET
    form = read_round_form(data, fresh_seed=request.method == "GET" and not data, random_draw=number == 1)
    stale = _stale_vectors(project, number)
    plan = None
    refusal: str | None = None
    if not form.errors:
        # On a POST with vectors missing the preview cannot train: the job computes them first, then draws or refuses.
        if not (request.method == "POST" and stale):
            # Moving a threshold only filters again: the detector and the pool's P(H) are kept between previews.
            plan = rounds.preview_round(project, **form.parameters, reuse_scores=True)
            refusal = plan.refusal
        if request.method == "POST" and refusal is None:
            started = _start(request, project, _submitted_number(request.POST, number), form, showing=number)
            if isinstance(started, HttpResponse):
                return started
            refusal = started
    context = {
        "project": project,
        "form": form,
        "number": number,
        "plan": plan,
        "refusal": refusal,
        **_vector_context(project, stale),
        "round_one": number == 1,
        "fields": wizard_fields(form, round_one=number == 1),
        # An htmx preview also replaces each field's message beside it (out of band): the form is not swapped.
        "oob_errors": bool(request.htmx),
        "empty_project": _empty_project(project, plan),
        "unfinished": rounds.unfinished_open_round(project),
        **_busy_context(project),
        "ratio": ratio_context(plan.ratio_dict() if plan and plan.number > 1 else None),
        "ratio_source": plan.ratio_source if plan else None,
        "funnel": funnel_rows(plan.funnel if plan else None),
        "preview_items": [
            {"item": item, "why": selection_in_words(selection)} for item, selection in _preview_items(plan)
        ],
    }
    status = 400 if (form.errors or refusal) and request.method == "POST" and not request.htmx else 200
    template = "annotate/pairs/round_new.html#preview" if request.htmx else "annotate/pairs/round_new.html"
    return render(request, template, context, status=status)


def _busy_context(project: Project) -> dict[str, Any]:
    """The round job that keeps the wizard from starting one (if any), how long it has waited, and its cancel."""
    busy_job = rounds.active_round_job(project)
    return {"busy_job": busy_job, "busy": rounds.round_job_busy(project),
            "busy_wait": rounds.round_job_wait(busy_job) if busy_job else None}


def _submitted_number(data: QueryDict, current: int) -> int:
    """The round the submitted wizard showed (its hidden field); the next round now when the form had none."""
    raw = data.get("number", "").strip()
    return int(raw) if raw.isascii() and raw.isdigit() and int(raw) >= 1 else current


def _start(request: HttpRequest, project: Project, number: int, form: RoundForm, *, showing: int
           ) -> HttpResponse | str:
    """Start the job for round ``number`` and go to its page; the refusal (another round job runs, or round
    ``number`` exists now) when it may not start, for the wizard to show with the fields as they were typed.
    ``showing`` is the round the wizard shown again plans: a stale refusal points the admin to it."""
    try:
        job = rounds.start_round_job(project, request.user, number=number, **form.parameters)
    except rounds.RoundRefused as refusal:
        # A round drawn meanwhile: the wizard shown again plans round `showing` now, and says so in its own words.
        return rounds.stale_wizard_refusal(project, number, showing) or str(refusal)
    return _to_round_job(request, project, job)  # a job the broker refused shows why on its page (failed)


def _stale_vectors(project: Project, number: int) -> int:
    """Items without a span vector from the project's encoder; round 1 needs none (it draws at random)."""
    return vectors.stale_items(project, vectors.encoder_name(project)).count() if number > 1 else 0


def _vector_context(project: Project, stale: int) -> dict[str, Any]:
    """The latest span-vector job; once no item lacks its vector, only if it has ended: a job still queued (no
    worker yet) would show a progress of 0 of N that is not the items' state (as on the project page)."""
    jobs = [job for job in Job.objects.filter(project=project, kind=Job.Kind.PAIR_VECTORS)[:1]
            if stale or not job.is_active]
    return {"stale_vectors": stale, "vector_jobs": jobs, "vectors_running": any(job.is_active for job in jobs)}


def _span_vectors_section(request: HttpRequest, project: Project, number: int) -> HttpResponse:
    """The span-vector section alone, which polls itself while a vector job runs.

    Its answer once no job runs carries VECTORS_FINISHED_EVENT: the wizard's form previews again with the
    values it holds, so the stale count, the funnel's pool and the refusal follow the finished job without a
    reload (and without a fresh seed).
    """
    context = {"project": project, "round_one": number == 1,
               **_vector_context(project, _stale_vectors(project, number))}
    response = render(request, "annotate/pairs/round_new.html#vectors", context)
    if not context["vectors_running"]:
        trigger_client_event(response, VECTORS_FINISHED_EVENT)
    return response


def _to_round_job(request: HttpRequest, project: Project, job: Job) -> HttpResponse:
    url = reverse("pairs-round-job", args=[project.slug, job.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


@require_POST
@login_required
def vectors_start(request: HttpRequest, slug: str) -> HttpResponse:
    """Compute the span vectors the detector needs (a background job); the wizard shows its progress."""
    project, _ = _pairs_project(request, slug, admin=True)
    job = vectors.start_vector_job(project, request.user)
    if job.status == Job.Status.FAILED:  # the broker refused its task: the job says why
        messages.error(request, f"Span vectors not started: {job.error}")
    else:
        messages.success(request, f"Computing the span vectors of {job.total} items; the preview works once they "
                                  "exist.")
    url = reverse("pairs-round-new", args=[project.slug])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


@require_GET
@login_required
def round_job(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """The round job's progress; once it is done, the round's page (htmx polls get a client redirect)."""
    project, _ = _pairs_project(request, slug, admin=True)
    job = get_object_or_404(Job, pk=pk, project=project, kind=Job.Kind.PAIR_ROUND)
    if job.status == Job.Status.DONE and job.options.get("round"):
        url = reverse("pairs-round", args=[project.slug, job.options["round"]])
        return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
    parameters = {name: job.options[name] for name in DEFAULTS if job.options.get(name) is not None}
    # The round the job draws (a job queued before jobs kept it: the next one) says whether it draws at random.
    number = job.options.get("number") or rounds.next_round_number(project)
    context = {"project": project, "job": job, "round_one": number == 1, "wait": rounds.round_job_wait(job),
               "again": f"{reverse('pairs-round-new', args=[project.slug])}?{urlencode(parameters)}"}
    template = "annotate/pairs/round_job.html#job" if request.htmx else "annotate/pairs/round_job.html"
    return render(request, template, context)


@require_POST
@login_required
def round_job_cancel(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    """Cancel a queued or running round job (admins): it draws no round, and a new round may be started.

    The way out of a job no worker runs (none started, or it died), which would otherwise block every later
    round. A job that has already ended is left as it is, with a message saying how it ended. Back to the
    wizard when the form came from there (``back=wizard``), else to the job's page, which shows who cancelled.
    """
    project, _ = _pairs_project(request, slug, admin=True)
    job = get_object_or_404(Job, pk=pk, project=project, kind=Job.Kind.PAIR_ROUND)
    try:
        rounds.cancel_round_job(job, request.user)
    except rounds.CancelRefused as refusal:
        messages.error(request, f"Not cancelled: {refusal}")
    else:
        messages.success(request, f"Job {job.pk} is cancelled: it draws no round. You can start a new round now.")
    if request.POST.get("back") == "wizard":
        url = reverse("pairs-round-new", args=[project.slug])
    else:
        url = reverse("pairs-round-job", args=[project.slug, job.pk])
    return HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)


def _preview_items(plan: Any, limit: int = 20) -> list[tuple[PairItem, dict[str, Any]]]:
    """The first items the preview would draw, looked up for display."""
    if plan is None or not plan.selected:
        return []
    chosen = plan.selected[:limit]
    items = PairItem.objects.only("external_id", "original_words", "perturbed_words").in_bulk(
        [item_id for item_id, _ in chosen]
    )
    return [(items[item_id], selection) for item_id, selection in chosen if item_id in items]


def selection_in_words(selection: dict[str, Any]) -> str:
    """Why an item was drawn, from its selection dict, in one sentence."""
    if not selection:
        return "No selection recorded."
    probability = selection.get("sampling_probability")
    if selection.get("method") == "random":
        chance = f" (each pool item had a chance of {probability:.3g})" if probability is not None else ""
        return f"Drawn at random from the pool{chance}."
    details = []
    if selection.get("p_h") is not None:
        details.append(f"P(H) = {selection['p_h']:.3f}")
    if selection.get("predicted"):
        details.append(f"predicted {selection['predicted']}")
    if selection.get("filters_passed"):
        details.append("passed " + ", ".join(FILTERS.get(name, str(name)) for name in selection["filters_passed"]))
    if probability is not None:
        details.append(f"drawn with probability {probability:.3g} among the items of its predicted class that passed")
    return "Chosen by the detector: " + "; ".join(details) + "."


# Metrics of the HaDes tables, in the order the round page lists them; why one is undefined is the service's
# (rounds.METRIC_UNDEFINED, in the report's ``metrics_undefined``), which the API gives too.
METRICS = [
    ("n", "Consensus items scored"),
    ("accuracy", "Accuracy"),
    ("precision_h", "Precision, H"),
    ("recall_h", "Recall, H"),
    ("f1_h", "F1, H"),
    ("precision_n", "Precision, N"),
    ("recall_n", "Recall, N"),
    ("f1_n", "F1, N"),
    ("g_mean", "G-mean, √(recall H × recall N)"),
    ("auc", "AUC of P(H)"),
    ("brier", "Brier score of P(H)"),
]


def metric_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The round report's metrics as the page's rows: name, value to 3 decimals, and why an undefined one is."""
    metrics, undefined = report["metrics"], report["metrics_undefined"]
    rows = []
    for key, name in METRICS:
        value = metrics.get(key) if metrics else None
        if value is not None and key != "n":
            value = f"{value:.3f}"
        rows.append({"key": key, "name": name, "value": value, "why": undefined.get(key)})
    return rows


def balance_words(report: dict[str, Any]) -> dict[str, str]:
    """The H share reached among the round's consensus items beside the share the subsampling promised."""
    balance, undefined = report["balance"], report["balance_undefined"]
    promised = balance.get("promised_h_share")
    h, n, share = balance.get("h", 0), balance.get("n", 0), balance.get("h_share")
    return {
        "promised": f"{share_text(promised)} H" if promised is not None
        else f"— ({undefined['promised_h_share']})",
        "reached": f"{share_text(share)} H ({h} H, {n} N)" if share is not None
        else f"— ({undefined['h_share']})",
        "note": "The promise holds in expectation, if the detector errs on the pool as it did on the counts "
                "behind R." if promised is not None else "",
    }


@require_GET
@login_required
def round_page(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    project, _ = _pairs_project(request, slug, admin=False)
    pair_round = PairRound.objects.filter(project=project, number=number).select_related("detector", "created_by").first()
    if pair_round is None:
        raise Http404(f"{project.name} has no round {number}")
    report = rounds.round_report(pair_round)
    items = pair_round.items.order_by("id")
    page = Paginator(items, ITEMS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "project": project,
        "pair_round": pair_round,
        "agreement": agreement.pair_agreement(project, pair_round.number),
        "metric_rows": metric_rows(report),
        "metrics_intro": report["metrics_reason"],
        "balance": balance_words(report),
        "ratio": ratio_context(pair_round.ratio if pair_round.ratio.get("action") else None),
        "ratio_source": pair_round.ratio.get("counts_from"),
        "round_one": pair_round.number == 1,
        "funnel": funnel_rows(pair_round.funnel),
        "page": page,
        "rows": [{"item": item, "why": selection_in_words(item.selection)} for item in page],
    }
    return render(request, "annotate/pairs/round.html", context)
