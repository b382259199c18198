"""Starting a pairs round over a pool of 100,000 items whose span vectors exist: preview + create, phase by phase.

Builds a pairs project with ``--pool`` items in the pool and ``--labelled``
consensus items, each with a stored float16 span vector (random, with a
class-dependent direction so the detector has something to learn), written
with bulk_create. Then times, as the round wizard runs them:

- round 2 (no earlier detector: R from 5-fold cross-validated predictions),
- round 3 (R from detector 2's predictions on round 2's consensus items),

each as ``preview_round`` (read, train, score, ratio, funnel) followed by
``create_round`` (which plans again, then writes the round, the detector and
the drawn items in one transaction). The target (issue 9) is preview + create
under 30 s. Baseline in the same run: the time to read the vectors alone.

    .venv/bin/python bench/bench_pairs_round.py                       # SQLite
    scripts/with-postgres.sh .venv/bin/python bench/bench_pairs_round.py   # PostgreSQL
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import CpuMonitor, database_version, machine, start_django, yes_no  # noqa: E402

DIMENSION = 385  # MiniLM's 384 plus the context feature
TARGET_SECONDS = 30.0


def build(pool: int, labelled: int, seed: int) -> tuple[object, np.ndarray]:
    """The project; returns it and the hidden direction that makes an item H."""
    from django.contrib.auth import get_user_model

    from annotate.models import Membership, PairConfig, PairItem, PairRound, PerturbedText, Project
    from annotate.services.pairs.vectors import encoder_name

    rng = np.random.default_rng(seed)
    project = Project.objects.create(name="Bench pairs", slug="bench-pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=project)
    admin = get_user_model().objects.create(username="bench-admin")
    Membership.objects.create(project=project, user=admin, role=Membership.Role.ADMIN)
    encoder = encoder_name(project)
    direction = rng.normal(size=DIMENSION).astype(np.float32)
    direction /= np.linalg.norm(direction)
    first = PairRound.objects.create(project=project, number=1, size=labelled, seed=seed, status="open")
    items_per_text = 5
    total = pool + labelled
    made = 0
    while made < total:
        chunk = min(5_000, total - made)
        texts = PerturbedText.objects.bulk_create([
            PerturbedText(project=project, text="word " * 40, source=PerturbedText.Source.HADES)
            for _ in range((chunk + items_per_text - 1) // items_per_text)
        ])
        # HaDes-like: about 70% of items H; an H item leans along the hidden direction.
        truth = rng.random(chunk) < 0.7
        vectors = rng.normal(size=(chunk, DIMENSION)).astype(np.float32)
        vectors += np.outer(np.where(truth, 1.2, -1.2), direction).astype(np.float32)
        similarity = rng.uniform(0.3, 1.0, size=chunk)
        swaps = rng.choice(["", "", "", "", "", "", "", "", "date", "name"], size=chunk)
        rows = []
        for index in range(chunk):
            number = made + index
            in_round = number < labelled
            rows.append(PairItem(
                project=project, perturbed=texts[index // items_per_text], position=index % items_per_text,
                perturbed_start=0, perturbed_end=4, perturbed_words="word",
                state=PairItem.State.CONSENSUS if in_round else PairItem.State.POOL,
                label=("H" if truth[index] else "N") if in_round else "",
                round=first if in_round else None,
                # The truth of a pool item rides in metadata so the bench can "judge" round 2 afterwards.
                metadata={"truth": "H" if truth[index] else "N"},
                vector=vectors[index].astype(np.float16).tobytes(), vector_model=encoder,
                paraphrase_similarity=float(similarity[index]), swap_kind=str(swaps[index]),
            ))
        PairItem.objects.bulk_create(rows, batch_size=1_000)
        made += chunk
    return project, direction


def read_baseline(project: object) -> float:
    """Seconds to read the pool's and the labelled items' vectors into one float32 matrix, and nothing else."""
    from annotate.models import PairItem
    from annotate.services.pairs.detector import decode_vectors

    began = time.perf_counter()
    blobs = list(PairItem.objects.filter(project=project, state__in=("pool", "consensus", "labelled"))
                 .order_by("pk").values_list("vector", flat=True))
    decode_vectors(blobs)
    return time.perf_counter() - began


def time_round(project: object, size: int, seed: int) -> dict[str, float]:
    from annotate.services.pairs import rounds

    began = time.perf_counter()
    plan = rounds.preview_round(project, size=size, low=0.05, high=0.95, seed=seed)
    preview = time.perf_counter() - began
    if plan.refusal:
        raise SystemExit(f"bench: round refused: {plan.refusal}")
    began = time.perf_counter()
    pair_round = rounds.create_round(project, None, size=size, low=0.05, high=0.95, seed=seed)
    create = time.perf_counter() - began
    return {"round": pair_round.number, "preview": preview, "create": create, "total": preview + create,
            "drawn": len(plan.selected), "counts": [row["count"] for row in plan.funnel],
            "action": plan.ratio.action if plan.ratio else "random", **plan.timings}


def judge_round(project: object, number: int) -> None:
    """Give the round's items their hidden truth as consensus, as the judges would."""
    from annotate.models import PairItem

    for label in ("H", "N"):
        PairItem.objects.filter(project=project, round__number=number, metadata__truth=label).update(
            state=PairItem.State.CONSENSUS, label=label
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", type=int, default=100_000)
    parser.add_argument("--labelled", type=int, default=1_000, help="round 1's consensus items")
    parser.add_argument("--size", type=int, default=2_000, help="items per round")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    env = start_django("pairs_round")
    print(f"bench_pairs_round: {machine()}; {database_version()}")
    began = time.perf_counter()
    project, _ = build(options.pool, options.labelled, options.seed)
    print(f"built {options.pool} pool items + {options.labelled} consensus items with {DIMENSION}-d float16 vectors "
          f"in {time.perf_counter() - began:.1f} s")

    baseline = min(read_baseline(project) for _ in range(3))
    print(f"baseline: read {options.pool + options.labelled} vectors into a matrix: {baseline:.2f} s (best of 3)")
    results = []
    with CpuMonitor() as monitor:
        results.append(time_round(project, options.size, options.seed))
        judge_round(project, 2)
        results.append(time_round(project, options.size, options.seed + 1))
    print(f"{'round':>5} {'R from':>16} {'read':>6} {'train':>6} {'score':>6} {'ratio':>6} {'funnel':>6} "
          f"{'preview':>8} {'create':>7} {'total':>7}  funnel counts")
    for row in results:
        source = "cross-validation" if row["round"] == 2 else "detector k-1"
        print(f"{row['round']:>5} {source:>16} {row['read']:>6.2f} {row['train']:>6.2f} {row['score']:>6.2f} "
              f"{row['ratio']:>6.2f} {row['funnel']:>6.2f} {row['preview']:>8.2f} {row['create']:>7.2f} "
              f"{row['total']:>7.2f}  {row['counts']} ({row['action']})")
    worst = max(row["total"] for row in results)
    print(f"slowest preview + create: {worst:.2f} s = {worst / baseline:.1f}x the vector read; "
          f"target < {TARGET_SECONDS:.0f} s: {yes_no(worst < TARGET_SECONDS)}")
    print(monitor.describe())
    env.close()


if __name__ == "__main__":
    main()
