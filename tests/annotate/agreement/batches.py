"""Label batches the agreement tests build: by hand from one string of categories per annotator, or at random
with varying rosters."""

from __future__ import annotations

import numpy as np

from annotate.agreement import BatchLabels

CODE = {"C": 0, "B": 1, "Q": 2, "U": 3}

SCHEMES = ["C|U", "C|B|U", "C+B|Q|U", "C+B|Q+U", "C|B|Q|U"]


def batch(name: str, rows: dict[str, str], samples: list[object] | None = None) -> BatchLabels:
    """A batch from one string of categories per annotator, e.g. {"a": "CCUU"}; '.' = no label (C)."""
    length = len(next(iter(rows.values())))
    keys = samples if samples is not None else list(range(length))
    labels = {
        (annotator, keys[position]): category
        for annotator, row in rows.items()
        for position, category in enumerate(row)
        if category != "."
    }
    return BatchLabels(name=name, annotators=list(rows), samples=list(keys), labels=labels)


def random_batches(seed: int, count: int = 6) -> list[BatchLabels]:
    """Batches with varying rosters (2-4 people out of 6), labels drawn with some agreement."""
    rng = np.random.default_rng(seed)
    people = [f"p{index}" for index in range(6)]
    batches = []
    for index in range(count):
        roster = list(rng.choice(people, size=int(rng.integers(2, 5)), replace=False))
        samples = list(range(int(rng.integers(5, 30))))
        truth = rng.choice(list("CBQU"), size=len(samples), p=[0.5, 0.2, 0.1, 0.2])
        labels = {}
        for person in roster:
            for key in samples:
                category = truth[key] if rng.random() < 0.7 else rng.choice(list("CBQU"))
                if category != "C" or rng.random() < 0.5:  # C is given both ways: explicitly and by absence
                    labels[(person, key)] = str(category)
        batches.append(BatchLabels(f"b{index}", roster, samples, labels))
    return batches

