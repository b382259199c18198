"""Challenging samples (the detectors' valid verdicts disagree) and the passages that hold the most of them,
as FaithBench chose its passages. Pure: no Django imports.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from annotate.results.detectors import binarise, check_threshold, verdict_detectors


def challenging_samples(
    samples: Mapping[Hashable, Mapping[str, Any]], threshold: float = 0.5, verdicts: Iterable[str] | None = None
) -> set[Hashable]:
    """Samples on which the detectors disagree: their valid binarised verdicts are not all equal.

    ``samples[sample][detector]`` is the detector's output. A sample with fewer
    than two valid outputs cannot show disagreement and is not challenging.
    ``verdicts`` names the 0/1 detectors; by default they are found from the data.
    """
    threshold = check_threshold(threshold)
    if verdicts is None:
        by_detector: dict[str, dict[Hashable, Any]] = defaultdict(dict)
        for sample, outputs in samples.items():
            for detector, value in outputs.items():
                by_detector[detector][sample] = value
        verdicts = verdict_detectors(by_detector)
    verdict_set = set(verdicts)
    challenging = set()
    for sample, outputs in samples.items():
        answers = {
            answer
            for detector, value in outputs.items()
            if (answer := binarise(value, threshold, detector in verdict_set)) is not None
        }
        if len(answers) > 1:
            challenging.add(sample)
    return challenging


def challenging_groups(
    groups: Mapping[Hashable, Mapping[Hashable, Mapping[str, Any]]], k: int, threshold: float = 0.5
) -> list[dict[str, Any]]:
    """Passage groups ranked by how many of their samples are challenging, keeping those with >= k.

    ``groups[passage][sample][detector]`` is a detector output. Verdict
    detectors are found over all groups at once. Returns
    ``[{"group", "challenging", "samples"}]``, most challenging first, ties in
    the groups' given order (FaithBench kept passages with at least 7 of 10).
    """
    everything = {(group, sample): outputs for group, members in groups.items() for sample, outputs in members.items()}
    hard = challenging_samples(everything, threshold)
    ranked = [
        {
            "group": group,
            "challenging": sum((group, sample) in hard for sample in members),
            "samples": len(members),
        }
        for group, members in groups.items()
    ]
    ranked.sort(key=lambda entry: -entry["challenging"])  # stable: ties keep the given order
    return [entry for entry in ranked if entry["challenging"] >= k]
