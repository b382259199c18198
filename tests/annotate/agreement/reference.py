"""Krippendorff's alpha straight from the `krippendorff` package on a set of units, the reference the fast paths of
label and token alpha are held to."""

from __future__ import annotations

import krippendorff
import numpy as np


def straightforward_alpha(counts: np.ndarray, groups: int, level: str) -> float | None:
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts) == 0 or np.count_nonzero(counts.sum(axis=0)) < 2:
        return None
    value = float(krippendorff.alpha(value_counts=counts, value_domain=np.arange(groups), level_of_measurement=level))
    return value if np.isfinite(value) else None
