"""What the judges page asks before a run or a triage starts: the calls it may make, in words.

Starting either sends paid LLM calls in the background at once, so the page
asks first (htmx's hx-confirm, as for removing a member or revoking a token).
The number of samples depends on the choices made in the form, so the
questions hold a count placeholder, ``{n sample|samples}``: the browser
(static/judging/run_confirm.js) puts the chosen count in, with the singular or
the plural. A run makes at most one call per sample: identical calls are
answered from the call cache, and one call's transient failures are retried
(counted as requests, not calls). No cost bound is given: the answers have no
length limit, so their tokens have no upper bound.
"""

from __future__ import annotations

from judging.costs import prices_text
from judging.models import Judge, JudgingSettings

CALLS = "{n call|calls}"
CACHE_NOTE = ("Identical calls made before (same prompt, model and settings) are answered from the cache and not "
              "paid again.")


def _price(judge: Judge) -> str:
    """The judge's prices (judging.costs.prices_text, as the pages write them), or that it has none; never a cost
    bound (see the module's docstring)."""
    input_price, output_price = judge.price_input_per_mtok, judge.price_output_per_mtok
    if input_price is None and output_price is None:
        return f"{judge.name} has no prices set, so no cost is shown."
    if input_price == 0 and output_price == 0:
        return f"{judge.name} is free ($0.00 per million tokens in and out): its calls cost nothing."
    unknown = " (a call's cost is not known where a price is not)" if None in (input_price, output_price) else ""
    return (f"{judge.name} is priced at {prices_text(input_price, output_price)} per million tokens{unknown}; no "
            "upper bound on the cost can be given, as answers have no length limit.")


def _rubric_calls(judge: Judge, *, more: str = "", per: str) -> str:
    retries = judge.max_retries
    again = f"retried up to {retries} time{'s' if retries != 1 else ''}" if retries else "not retried"
    return (f"{judge.name} sends at most {CALLS}{more} to {judge.model} at {judge.base_url}, one per {per} (a call "
            f"that meets a rate limit, a server error or a timeout is {again})")


def _nli_work(judge: Judge, per: str) -> str:
    return (f"{judge.name} runs its NLI model on this server's worker, one judgement per {per}: no endpoint calls, "
            "nothing paid")


def run_question(judge: Judge, per: str = "sample") -> str:
    """Asked before a run of `judge` over some `per`s (samples, a synthetic set's items) starts; "" for a judge that
    cannot run (imported), which the form refuses."""
    over = f"Start a run of {judge.name} over {{n {per}|{per}s}}?"
    if judge.kind == Judge.Kind.RUBRIC:
        return f"{over} {_rubric_calls(judge, per=per)}. {CACHE_NOTE} {_price(judge)}"
    if judge.kind == Judge.Kind.NLI:
        return f"{over} {_nli_work(judge, per)}."
    return ""


def triage_question(settings: JudgingSettings, explainer: Judge | None) -> str:
    """Asked before a triage starts: the first pass over the samples, then `explainer` (None: no explainer runs) on
    those it flags, at most one more call each. "" when no first pass could run (the form says why)."""
    first = settings.first_pass
    if first is None or first.kind == Judge.Kind.IMPORTED:
        return ""
    work = _rubric_calls(first, per="sample") if first.kind == Judge.Kind.RUBRIC else _nli_work(first, "sample")
    flags = (f"It flags an LLM score of at most {settings.llm_flag_at_most} or an NLI p below "
             f"{settings.nli_flag_below:g}; the flagged outputs go to the audit queue")
    parts = [f"Start triage over {{n sample|samples}}? First pass: {work}.", flags + "."]
    if explainer is None:
        parts.append("No explainer runs after it.")
    elif explainer.kind == Judge.Kind.RUBRIC:
        parts.append(f"Then the explainer: {_rubric_calls(explainer, more=' more', per='flagged output')}.")
    else:
        parts.append(f"Then the explainer: {_nli_work(explainer, 'flagged output')}.")
    parts.append(CACHE_NOTE)
    parts.extend(_price(judge) for judge in (first, explainer) if judge is not None and judge.kind == Judge.Kind.RUBRIC)
    return " ".join(parts)
