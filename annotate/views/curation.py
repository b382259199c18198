"""Curation: disputed samples, adjudicated gold labels, bulk acceptance of agreed samples."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from annotate import access
from annotate.models import GoldLabel, Sample
from annotate.services import curation, freeze, rounds
from annotate.taxonomy import CATEGORY_NAMES
from annotate.views import paging

ADJUDICATION_DEFERRED = (
    "embeddings", "sentences", "metadata", "imported_fields",
    "passage__embeddings", "passage__sentences",
)


def _round(request: HttpRequest) -> int:
    raw = request.GET.get("round") or request.POST.get("round") or "1"
    return int(raw) if raw.isdigit() and int(raw) >= 1 else 1


@require_http_methods(["GET"])
@login_required
def curation_list(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.get_project_for_curator(request.user, slug)
    round = _round(request)
    listing = curation.curation_list(project, round, request.GET.get("page"))
    saved = request.GET.get("saved", "")
    return render(request, "annotate/curation.html", {
        # The sample whose gold label was just saved: its row's link takes the focus, so the keyboard goes on there.
        "saved": int(saved) if saved.isascii() and saved.isdigit() else None,
        "project": project, "rows": listing.rows, "round": round, "listing": listing, "page": listing.page,
        # The page links keep every other parameter of the query (the round).
        "page_query": paging.page_query(request.GET), "agreed_open": listing.agreed_open,
        "stale_count": listing.stale_count,
    })


@require_POST
@login_required
def accept_agreed(request: HttpRequest, slug: str) -> HttpResponse:
    project, _ = access.get_project_for_curator(request.user, slug)
    count = rounds.accept_agreed_samples(project, request.user, round=_round(request))
    messages.success(request, f"Accepted {count} sample{pluralize(count)} where every annotator agreed.")
    return HttpResponseRedirect(reverse("curation", args=[slug]) + f"?round={_round(request)}")


@require_http_methods(["GET", "POST"])
@login_required
def adjudicate(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    project, _ = access.get_project_for_curator(request.user, slug)
    # The page prints texts and names: the embeddings, sentences and metadata stay in the database.
    sample = get_object_or_404(
        Sample.objects.select_related("passage", "batch").defer(*ADJUDICATION_DEFERRED), pk=pk, project=project
    )
    round = _round(request)
    picked: set[int] | None = None  # the spans the curator ticked, kept on the form when the save is refused
    status = 200
    if request.method == "POST":
        posted = request.POST.getlist("spans")
        # "Save and next disputed": the sample after this one in the list the curator saw, before this save moves it.
        then_next = request.POST.get("then") == "next"
        following = curation.next_needing_gold(project, round, sample) if then_next else None
        try:
            # The gold label the form showed (a form without the field is not checked).
            stamp = request.POST.get("base_decided_at")
            seen = None if stamp is None else rounds.read_gold_stamp(stamp)
            rounds.adjudicate_sample(sample, request.user, span_ids=posted, round=round, seen=seen)
        except (rounds.RoundError, ValueError) as error:
            messages.error(request, str(error))
            picked = {int(pk) for pk in posted if pk.isascii() and pk.isdigit()}
            status = 409 if isinstance(error, rounds.GoldConflict) else 200
        else:
            name = sample.external_id or sample.pk
            if following is not None:
                messages.success(request, f"Gold label of sample {name} saved. The next sample that needs one:")
                return HttpResponseRedirect(reverse("adjudicate", args=[slug, following]) + f"?round={round}")
            if then_next:
                messages.success(request, f"Gold label of sample {name} saved. No other sample of round {round} "
                                          "waits for a gold label.")
            else:
                messages.success(request, "Gold label saved.")
            return HttpResponseRedirect(reverse("curation", args=[slug]) + f"?round={round}&saved={sample.pk}")
    # The round's submitters' spans only: an unassigned or replaced annotator's work is in no curation.
    spans = rounds.submitted_spans(sample, round).select_related("annotator").order_by(
        "annotator__username", "start", "id"
    )
    spans = list(spans)
    gold = GoldLabel.objects.filter(sample=sample).select_related("decided_by").first()
    in_gold = {span["from_span"] for span in gold.spans} if gold else set()
    return render(request, "annotate/adjudicate.html", {
        "project": project, "sample": sample, "spans": spans, "gold": gold, "round": round,
        "summary_pieces": curation.marked_summary(sample.summary, spans),
        "chosen": in_gold if picked is None else picked, "in_gold": in_gold,
        # The form now shows this gold label: saving it again after a refusal is the curator's decision.
        "gold_stamp": rounds.gold_stamp(gold),
        "stale": freeze.stale_gold_samples(project, sample_id=sample.pk).get(sample.pk) if gold else None,
        "gold_name": CATEGORY_NAMES.get(gold.category) if gold else None,
    }, status=status)
