"""How a round went (``round_report``): its items by state, the selecting detector's held-out metrics on its
consensus items, the H/N balance reached beside the one promised, and why each undefined figure is undefined.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from annotate.models import PairItem, PairRound
from annotate.services.pairs import detector as detection

# Why a metric of the HaDes tables is undefined (annotate.pairmath.metrics gives None), by its key. The round page
# and the API give these reasons: the service says why, so the two cannot word it differently. ``n`` is never None
# once there are metrics (``metrics_reason`` says why there are none).
METRIC_UNDEFINED = {
    "accuracy": "no item to score",
    "precision_h": "the detector predicted no item H",
    "recall_h": "no consensus item of the round is H",
    "f1_h": "no item is H or predicted H",
    "precision_n": "the detector predicted no item N",
    "recall_n": "no consensus item of the round is N",
    "f1_n": "no item is N or predicted N",
    "g_mean": "it needs the recall of both classes",
    "auc": "it needs both H and N items",
    "brier": "no item to score",
}
# Why a figure of the round's H/N balance is undefined, by its key in the report's ``balance``.
BALANCE_UNDEFINED = {
    "h_share": "no item of this round has reached consensus yet",
    "promised_h_share": "nothing promised: the round was drawn at random or without subsampling counts",
}


def _undefined(figures: dict[str, Any] | None, reasons: dict[str, str]) -> dict[str, str]:
    """The reason of each figure that is None; none when there are no figures at all (another field says why)."""
    if not figures:
        return {}
    return {key: reason for key, reason in reasons.items() if figures.get(key) is None}


def round_report(pair_round: PairRound) -> dict[str, Any]:
    """How a round went: its items by state, the selecting detector's metrics on its consensus items, the balance.

    The metrics are those of the detector that selected the round (trained
    before any of its items were judged) on the round's consensus items, so they
    are held-out figures. ``balance`` puts the share of H reached among the
    consensus items beside the share the subsampling promised. A figure that is
    None has its reason under ``metrics_undefined`` or ``balance_undefined``
    (same key); ``metrics_reason`` says why there are no metrics at all, or
    which consensus items they leave out.
    """
    from annotate.pairmath.metrics import detector_metrics

    states = dict(
        PairItem.objects.filter(round=pair_round).values_list("state").annotate(n=Count("id")).order_by()
    )
    consensus = PairItem.objects.filter(round=pair_round, state=PairItem.State.CONSENSUS)
    labels = consensus.aggregate(h=Count("id", filter=Q(label="H")), n=Count("id", filter=Q(label="N")))
    h, n = labels["h"], labels["n"]
    report: dict[str, Any] = {
        "round": pair_round.number,
        "status": pair_round.status,
        "size": pair_round.size,
        "drawn": sum(states.values()),
        "states": {state: states.get(state, 0) for state, _ in PairItem.State.choices},
        "detector": None,
        "metrics": None,
        "metrics_reason": None,
        "balance": {
            "h": h, "n": n, "h_share": h / (h + n) if h + n else None,
            "promised_h_share": pair_round.promised_h_share,
        },
        "ratio": pair_round.ratio,
        # The H share expected of the drawn items themselves beside the promised one, with the pools' mixes and why
        # they differ (annotate.pairmath.subsampling.selection_balance); None for a random round or one stored
        # before it was kept.
        "selection_balance": pair_round.ratio.get("selection") if isinstance(pair_round.ratio, dict) else None,
        "funnel": pair_round.funnel,
        "metrics_undefined": {},
    }
    report["balance_undefined"] = _undefined(report["balance"], BALANCE_UNDEFINED)
    detector = pair_round.detector
    if detector is None:
        report["metrics_reason"] = (
            "No detector selected this round (round 1 is drawn at random), so there is nothing to evaluate."
            if pair_round.number == 1 else "The detector that selected this round was deleted."
        )
        return report
    report["detector"] = {"number": detector.number, "encoder": detector.encoder,
                          "trained_on": detector.trained_on, "trained_h": detector.trained_h}
    rows = list(consensus.filter(vector_model=detector.encoder, vector__isnull=False)
                .order_by("pk").values_list("label", "vector"))
    without_vector = h + n - len(rows)
    if not rows:
        report["metrics_reason"] = (
            "No consensus item of this round yet." if h + n == 0 else
            f"None of the {h + n} consensus items has a span vector from {detector.encoder!r}."
        )
        return report
    head = detection.load_head(detector)
    p_h = head.p_h(detection.decode_vectors([vector for _, vector in rows]))
    report["metrics"] = detector_metrics([1 if label == "H" else 0 for label, _ in rows], p_h.tolist())
    report["metrics_undefined"] = _undefined(report["metrics"], METRIC_UNDEFINED)
    if without_vector:
        report["metrics_reason"] = (f"{without_vector} of the {h + n} consensus items have no span vector from "
                                    f"{detector.encoder!r} and are left out.")
    return report
