"""A round in words, as the wizard's preview and the round's page both show it: the funnel's steps, the
subsampling action, and why an item was drawn."""

from __future__ import annotations

from typing import Any

from annotate.percent import share_text
from annotate.services.pairs import rounds

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
    shown = {**ratio, "action_words": ACTIONS.get(ratio.get("action", ""), ratio.get("action", ""))}
    if ratio.get("action") == "keep_no_h" and isinstance(ratio.get("R"), int | float) and ratio["R"] < 0:
        shown["R"] = 0.0  # a round stored before R was set to 0 there (DESIGN.md); its reason keeps the formula's value
    return shown


def selection_balance_words(selection: dict[str, Any] | None) -> dict[str, str] | None:
    """The H share expected of the drawn items beside the promised one, and why they differ (the stored or previewed
    ``selection`` of the ratio, annotate.pairmath.subsampling.selection_balance); None when there is none."""
    if not selection:
        return None
    expected = selection.get("expected_h_share")
    return {
        "promised": f"{share_text(selection.get('promised_h_share'))} H",
        "expected": f"{share_text(expected)} H" if expected is not None else "— (see below)",
        "note": selection.get("explanation") or "",
    }


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
