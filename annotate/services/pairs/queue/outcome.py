"""The outcome of an item: its counters, state, label and judges_needed, from its counted answers."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count

from annotate.models import PairConfig, PairItem, PairJudgement
from annotate.pairmath.consensus import outcome
from annotate.services.pairs.queue import locks
from annotate.services.pairs.queue.locks import lock_rows

# States in which an item's counters and outcome follow its judgements (drawn into a round).
JUDGED_STATES = (PairItem.State.OPEN, PairItem.State.CONSENSUS, PairItem.State.NO_CONSENSUS)
_OUTCOME_STATE = {
    "pending": PairItem.State.OPEN,
    "consensus": PairItem.State.CONSENSUS,
    "no_consensus": PairItem.State.NO_CONSENSUS,
}


def recompute_item(item: PairItem, config: PairConfig, labels: list[str] | None = None) -> PairItem:
    """Counters, state, label and judges_needed of the item from its counted answers, in answer order.

    ``labels`` may be given when the caller already read them. The caller holds
    the item's row lock; nothing is saved here.
    """
    if labels is None:
        labels = list(
            PairJudgement.objects.filter(item=item, counted=True, answered_at__isnull=False)
            .order_by("answered_at", "id")
            .values_list("label", flat=True)
        )
    item.votes_h = labels.count("H")
    item.votes_n = labels.count("N")
    item.votes_unsure = labels.count("?")
    if item.state in JUDGED_STATES:
        decided = outcome(labels, config.judges_per_item, config.max_judges_per_item)
        item.state = _OUTCOME_STATE[decided.state]
        item.label = decided.label
        item.judges_needed = decided.judges_needed
    return item


_RECOMPUTED_FIELDS = ["votes_h", "votes_n", "votes_unsure", "state", "label", "judges_needed"]


def recount_items(item_ids: list[int], config: PairConfig) -> list[PairItem]:
    """Recompute counters, taken and outcome of the items from their judgements (after a judge is blocked).

    Serves older than serve_minutes are released first. Locks the items in id order.
    """
    if not item_ids:
        return []
    items = list(lock_rows(PairItem.objects.filter(pk__in=item_ids).order_by("id")))
    cutoff = locks.now() - timedelta(minutes=config.serve_minutes)
    PairJudgement.objects.filter(
        item_id__in=item_ids, counted=True, answered_at__isnull=True, served_at__lt=cutoff
    ).update(counted=False)
    labels: dict[int, list[str]] = {item.pk: [] for item in items}
    for item_id, label in (
        PairJudgement.objects.filter(item_id__in=item_ids, counted=True, answered_at__isnull=False)
        .order_by("item_id", "answered_at", "id")
        .values_list("item_id", "label")
    ):
        labels[item_id].append(label)
    held = dict(
        PairJudgement.objects.filter(item_id__in=item_ids, counted=True, answered_at__isnull=True)
        .values_list("item_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    for item in items:
        recompute_item(item, config, labels[item.pk])
        item.taken = len(labels[item.pk]) + held.get(item.pk, 0)
    PairItem.objects.bulk_update(items, [*_RECOMPUTED_FIELDS, "taken"])
    return items
