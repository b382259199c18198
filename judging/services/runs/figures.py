"""A run's figures counted from its judgements: what its page shows, and the token and cost totals that its
`judge --json` summary and the API's run summary carry (one computation for all three)."""

from __future__ import annotations

import math
from typing import Any

from django.db import DataError, transaction
from django.db.models import Avg, Count, Q, Sum

from judging.models import Judge, Judgement, JudgeRun

# Why a token or cost total is null, under the summary's name of the figure.
NOTHING_JUDGED = "Nothing is judged yet."
CANCELLED_UNJUDGED = "The run was cancelled before any judgement."
FAILED_UNJUDGED = "The run failed before any judgement."
NOT_FOR_NLI = "An NLI judge runs a local model: it sends no tokens and has no price."
NOT_IN_FILE = "The imported file reported none."
NO_ANSWER = "No call sent got an answer: an endpoint error reports no token usage."
NO_USAGE = "No call sent reported its token usage (some local servers report none)."
UNPRICED = ("The judge had no prices when its calls were sent (US$ per million tokens, set on the judges page), "
            "so their cost is not known; the tokens are.")
UNPRICED_SOME = ("{unpriced} of the {usage} calls sent that reported their tokens went while the judge had no prices "
                 "(US$ per million tokens, set on the judges page), so their cost, and the run's, is not known (a total "
                 "of the others would read as the run's); the tokens are.")
NO_CACHED_USAGE = "No answer from the call cache came with token usage."
TOO_LARGE = ("The stored costs add up to more than a number can hold: some judgement's cost is absurd (imported before "
             "imports refused a cost over US$ 10,000 a call).")
# The aggregates that are sums or means of floats, which can overflow (_aggregate).
FLOAT_FIGURES = ("spent", "mean_latency")

TOKEN_FIGURES = ("input_tokens", "output_tokens", "cached_input_tokens_saved", "cached_output_tokens_saved")
# A call sent that reported its tokens (some above 0) with no price: stored as cost null (Judge.cost_of; a 0 is a
# free judge's). The query form of Judgement.cost_unpriced, less its two other conditions (sent; not an imported
# run), which the caller adds.
UNPRICED_ROW = (Q(input_tokens__isnull=False, output_tokens__isnull=False)
                & (Q(input_tokens__gt=0) | Q(output_tokens__gt=0)) & Q(cost__isnull=True))

COUNT_FIGURES = ("calls_with_usage", "calls_without_usage", "cached_answers_with_usage",
                 "cached_answers_without_usage")


def run_figures(run: JudgeRun) -> dict[str, Any]:
    """A run's counts from its judgements (what is stored, not what the progress row says), with its cost.

    Cost, ``mean_latency`` and the ``sent_*`` token sums are over the calls
    actually sent: tokens x the judge's prices = cost, as each call was priced.
    Answers from the call cache (``cached_*`` tokens) were paid by an earlier
    call and took no endpoint time, so they are shown apart, never added in:
    the tokens the cache saved, over ``cached_usage`` answers (those whose
    earlier call reported its usage; ``cached`` counts them all). The rule of
    the run's rows (Judgement.run_*, the API's and the exports' latency, tokens
    and cost) is the same, so the rows add up to these figures.
    ``mean_latency`` is each call's whole time, retries and their waits included,
    over the calls that answered and those that ended as endpoint errors (the run
    waited for both). ``answered_calls`` are the calls sent that came back with an
    answer; ``usage_calls`` of them reported their token usage and
    ``no_usage_calls`` did not: when both are above 0 the cost and tokens are a
    partial total, and the page says of how many calls. Calls that reported
    tokens yet have no price (``unpriced_calls``, Judgement.cost_unpriced:
    the judge had no prices when they were sent) have an unknown cost, and
    one of them makes the run's cost unknown (``cost_unpriced``): None, not 0,
    nor a total of the other calls.
    ``usage`` holds the token and cost totals under the summary's names
    (usage_totals).
    """
    status = Judgement.Status
    sent, from_cache = Q(cached=False), Q(cached=True)
    answered = Q(status__in=[status.OK, status.PARSE_ERROR])
    figures = dict(
        judged=Count("id"),
        scored=Count("id", filter=Q(status=status.OK)),
        parse_errors=Count("id", filter=Q(status=status.PARSE_ERROR)),
        errors=Count("id", filter=Q(status=status.ERROR)),
        from_cache=Count("id", filter=from_cache),  # not "cached": the filter names that field
        sent_calls=Count("id", filter=sent),
        answered_calls=Count("id", filter=sent & answered),
        usage_calls=Count("id", filter=sent & answered & Q(input_tokens__isnull=False, output_tokens__isnull=False)),
        retried=Count("id", filter=sent & Q(attempts__gt=1)),
        spent=Sum("cost", filter=sent),  # not "cost": UNPRICED_ROW filters on that field
        mean_latency=Avg("latency_seconds", filter=sent),
        latency_calls=Count("id", filter=sent & Q(latency_seconds__isnull=False)),
        sent_input_tokens=Sum("input_tokens", filter=sent),
        sent_output_tokens=Sum("output_tokens", filter=sent),
        cached_input_tokens=Sum("input_tokens", filter=from_cache),
        cached_output_tokens=Sum("output_tokens", filter=from_cache),
        cached_usage=Count("id", filter=from_cache & Q(input_tokens__isnull=False, output_tokens__isnull=False)),
        unpriced_calls=Count("id", filter=sent & UNPRICED_ROW),
    )
    found = _aggregate(run, figures)
    found["cached"] = found.pop("from_cache")
    found["cost"] = found.pop("spent")
    found["cached_no_usage"] = found["cached"] - found["cached_usage"]
    found["no_usage_calls"] = found["answered_calls"] - found["usage_calls"]
    found["partial_usage"] = bool(found["usage_calls"] and found["no_usage_calls"])
    sent_calls = found.pop("sent_calls")
    # A sum over no judgement is None ("not reported"); in a run with judgements but no call sent (a fully cached
    # re-run) or none from the cache, that group's tokens and cost are a true 0.
    for group, count in (("sent", sent_calls), ("cached", found["cached"])):
        if found["judged"] and count == 0:
            found[f"{group}_input_tokens"] = found[f"{group}_output_tokens"] = 0
            if group == "sent":
                found["cost"] = 0.0
    # Each call is priced when it is sent (Judge.cost_of): one that reported tokens while the judge had no prices
    # has no known cost (Judgement.cost_unpriced, the rule of each row). One such call makes the run's cost unknown:
    # a total of the others would read as what the run cost. An imported run's cost is the file's, whatever it says.
    if run.scope == JudgeRun.Scope.IMPORTED:
        found["unpriced_calls"] = 0
    found["cost_unpriced"] = found["unpriced_calls"] > 0
    if found["cost_unpriced"]:
        found["cost"] = None
    found["usage"] = usage_totals(run, found)
    return {
        "items": run.total,
        **found,
        "calls": run.calls,
        "seconds": run.seconds,
        "rubric_version": run.rubric.number if run.rubric_id else None,
    }


def _aggregate(run: JudgeRun, figures: dict[str, Any]) -> dict[str, Any]:
    """The run's aggregates, a float sum or mean past the largest double (values stored before imports were bounded:
    judging.services.ingest.lines) None with ``too_large`` naming it: SQLite gives such a sum as infinity, which no
    JSON answer can carry (the run's API was a 500), and PostgreSQL refuses to compute it ("value out of range")."""
    try:
        with transaction.atomic():  # a savepoint: PostgreSQL's refusal leaves the surrounding transaction usable
            found = run.judgements.aggregate(**figures)
    except DataError:
        found = run.judgements.aggregate(**{name: value for name, value in figures.items() if name not in FLOAT_FIGURES})
        found.update(dict.fromkeys(FLOAT_FIGURES, math.inf))
    found["too_large"] = [name for name in FLOAT_FIGURES
                          if isinstance(found[name], float) and not math.isfinite(found[name])]
    for name in found["too_large"]:
        found[name] = None
    return found


def usage_totals(run: JudgeRun, figures: dict[str, Any]) -> dict[str, Any]:
    """The token and cost totals of run_figures under the names the run summary gives them, each null figure's
    reason in ``reasons`` under its name.

    ``input_tokens``, ``output_tokens`` and ``cost`` (US$) are of the calls this
    run sent; ``calls_with_usage`` and ``calls_without_usage`` split the calls
    sent that came back with an answer by whether they reported their token
    usage (both above 0: the totals are of the first only). The
    ``cached_*_tokens_saved`` are the tokens of the answers from the call cache
    (paid by an earlier call, never in the cost), over
    ``cached_answers_with_usage`` answers; ``cached_answers_without_usage``
    more came without token usage. Unknown is null, never 0.
    """
    if run.judge.kind == Judge.Kind.NLI:
        return {**dict.fromkeys((*TOKEN_FIGURES, "cost", *COUNT_FIGURES)),
                "reasons": dict.fromkeys((*TOKEN_FIGURES, "cost", *COUNT_FIGURES), NOT_FOR_NLI)}
    totals = {
        "input_tokens": figures["sent_input_tokens"],
        "output_tokens": figures["sent_output_tokens"],
        "cost": figures["cost"],
        "calls_with_usage": figures["usage_calls"],
        "calls_without_usage": figures["no_usage_calls"],
        "cached_input_tokens_saved": figures["cached_input_tokens"],
        "cached_output_tokens_saved": figures["cached_output_tokens"],
        "cached_answers_with_usage": figures["cached_usage"],
        "cached_answers_without_usage": figures["cached_no_usage"],
    }
    if not figures["judged"]:
        why_sent = why_cached = nothing_judged_reason(run)
    elif run.scope == JudgeRun.Scope.IMPORTED:
        why_sent = why_cached = NOT_IN_FILE
    else:
        why_sent = NO_USAGE if figures["answered_calls"] else NO_ANSWER
        why_cached = NO_CACHED_USAGE
    reasons: dict[str, str] = {}
    for name in ("input_tokens", "output_tokens", "cost"):
        if totals[name] is None:
            reasons[name] = unpriced_reason(figures) if name == "cost" and figures["cost_unpriced"] else why_sent
    if "spent" in figures.get("too_large", ()) and not figures["cost_unpriced"]:
        reasons["cost"] = TOO_LARGE
    for name in ("cached_input_tokens_saved", "cached_output_tokens_saved"):
        if totals[name] is None:
            reasons[name] = why_cached
    return totals | {"reasons": reasons}


def nothing_judged_reason(run: JudgeRun) -> str:
    """Why a run with no judgement has no figures: it was cancelled or failed before any, or has none yet."""
    if run.cancelled:
        return CANCELLED_UNJUDGED
    if run.status == JudgeRun.Status.FAILED:
        return FAILED_UNJUDGED
    return NOTHING_JUDGED


def unpriced_reason(figures: dict[str, Any]) -> str:
    """Why the run's cost is null when calls it sent have no price: all its calls that reported tokens, or how many."""
    unpriced, usage = figures["unpriced_calls"], figures["usage_calls"]
    if unpriced >= usage:
        return UNPRICED
    return UNPRICED_SOME.format(unpriced=unpriced, usage=usage)
