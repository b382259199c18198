"""The round wizard keeps its scored pool between previews while nothing it is computed from changes.

Why: moving a threshold asks for a new preview (htmx), and each preview read
every span vector, trained the detector, scored the pool and, in round 2,
cross-validated it. On the benchmark's project (bench/bench_pairs_round.py:
100,000 pool items, 1,000 labelled; SQLite, two busy cores) a preview took
0.91 s: reading the vectors 0.53 s, the cross-validation for R 0.19 s,
scoring 0.13 s, training 0.04 s (0.8 s the first time, which imports
scikit-learn), the filters and the draw 0.01 s. So the whole scored pool
(annotate.services.pairs.pool_scores) is kept, not only the head.

The fingerprint, everything the scored pool depends on:

- the project's id and creation time (ids come back after a deletion);
- the encoder name and the seed (training and cross-validation are seeded);
- the round number and the previous round's detector (the counts for R);
- the pool: how many items, their id sum and highest id (a round drawn, an
  import); indexed, 14 ms at 100,000 items (the same data, SQLite);
- the labelled items, by state and label: how many, id sum, highest id.

Answers that leave every consensus as it was change none of it, so a round
being judged does not empty the cache; an item reaching consensus, or losing
it when a judge is blocked, does. The vectors need no figure of their own:
they are only ever written to items without one from the encoder
(annotate.services.pairs.vectors), and scores are kept only when every item
had one, so the same items have the same vectors; a plan with missing vectors
is refused and not kept. Not seen: an exchange of labelled items that keeps
each label's count, id sum and highest id; a vector cleared by hand (the
wizard still counts it as missing, and the round job computes it before
drawing); vectors recomputed under the same encoder name from another model.
The next change seen refreshes the entry.

Storage: Django's default cache. config/settings.py sets no CACHES, so that
is each process's local memory: right for one web process; with several,
each keeps its own and pays one fresh preview. One entry per project,
replaced when the fingerprint changes (a fresh seed per wizard visit would
otherwise pile up entries of a few MB at 100,000 items), for 30 minutes.
The round job never reads it: ``create_round`` plans afresh and trains.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max, Sum

from annotate.models import PairItem, PairRound, Project
from annotate.services.pairs.pool_scores import ScoredPool

KEEP_SECONDS = 30 * 60


def _cache_key(project: Project) -> str:
    return f"faithlab:pairs-preview:{project.pk}"


def fingerprint(project: Project, encoder: str, seed: int, number: int) -> tuple[Any, ...]:
    """What the scored pool of round ``number`` depends on (see the module docstring); three small queries."""
    pool = PairItem.objects.filter(project=project, state=PairItem.State.POOL).aggregate(
        count=Count("id"), id_sum=Sum("id"), top=Max("id")
    )
    labelled = (
        PairItem.objects.filter(project=project, state__in=(PairItem.State.CONSENSUS, PairItem.State.LABELLED))
        .values("state", "label")
        .annotate(count=Count("id"), id_sum=Sum("id"), top=Max("id"))
        .order_by("state", "label")
        .values_list("state", "label", "count", "id_sum", "top")
    )
    previous = (
        PairRound.objects.filter(project=project, number__lt=number).order_by("-number")
        .values_list("pk", "detector_id").first()
    )
    return (project.pk, project.created_at.isoformat(), encoder, seed, number, previous,
            (pool["count"], pool["id_sum"], pool["top"]), tuple(labelled))


def kept_scores(project: Project, key: tuple[Any, ...]) -> ScoredPool | None:
    """The project's kept scored pool if it was computed under ``key``, else None."""
    entry = cache.get(_cache_key(project))
    if entry is None or entry[0] != key:
        return None
    return entry[1]


def keep_scores(project: Project, key: tuple[Any, ...], scored: ScoredPool) -> None:
    """Keep ``scored`` for the project's next previews, without its training vectors (a round retrains anyway)."""
    cache.set(_cache_key(project), (key, dataclasses.replace(scored, training=None, timings={})), KEEP_SECONDS)
