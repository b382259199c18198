"""The pairs REST API: the next item, answers (with the following item), undo, items, rounds, figures, spammer flags.

Same rules as the pages, because both go through the same services
(``annotate.services.pairs.queue`` and ``.flags``): outsiders get 404, a role
that may not do this 403, anonymous callers 401. Annotators work blind: the
item list shows them only the items they judged, with only their own label,
never the others' votes or the consensus.

Split by topic: ``lookups`` (project lookups, queue refusals), ``serializers``
(serializers and schema components), ``judging`` (the judge's endpoints),
``items`` (item and round lists), ``figures`` (agreement, one round with its
detector metrics and balance), ``flags`` (spammer flags, admins) and ``jobs`` (cancelling a stuck round or
perturbation job, admins). The
views are re-exported here for ``annotate.api.urls``.
"""

from __future__ import annotations

from annotate.api.pairs.figures import PairAgreementView, PairRoundDetailView
from annotate.api.pairs.flags import BlockJudgeView, DismissFlagView, JudgeFlagListView, UnblockJudgeView
from annotate.api.pairs.items import PairItemListView, PairRoundListView
from annotate.api.pairs.jobs import CancelPerturbationJobView, CancelRoundJobView
from annotate.api.pairs.judging import NextPairView, PairJudgementView, UndoPairView

__all__ = [
    "BlockJudgeView",
    "CancelPerturbationJobView",
    "CancelRoundJobView",
    "DismissFlagView",
    "JudgeFlagListView",
    "NextPairView",
    "PairAgreementView",
    "PairItemListView",
    "PairJudgementView",
    "PairRoundDetailView",
    "PairRoundListView",
    "UnblockJudgeView",
    "UndoPairView",
]
