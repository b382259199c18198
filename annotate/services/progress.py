"""Which samples count as done by one annotator in one round of a batch: the rule every page shows.

Natively a sample is done when the annotator marked it done (their SampleReview
says so). Imported FaithBench work is submitted with its spans but without
reviews, so in a submitted assignment a sample with no review counts as done
(no span = consistent), with no time recorded. The home page, the project page,
the sample page and the sample browser all ask ``counts_as_done``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def counts_as_done(review_done: bool | None, *, submitted: bool) -> bool:
    """``review_done``: the annotator's review of the sample (done or not), None when there is none."""
    return submitted if review_done is None else review_done


def done_samples(sample_ids: Iterable[int], reviews: Mapping[int, bool], *, submitted: bool) -> list[int]:
    """The samples (in the order given) that count as done; ``reviews`` maps sample id to the review's done."""
    return [pk for pk in sample_ids if counts_as_done(reviews.get(pk), submitted=submitted)]


def done_count(total: int, *, reviewed: int, reviewed_done: int, submitted: bool) -> int:
    """How many of a batch's ``total`` samples count as done, from counts of the annotator's reviews."""
    unreviewed = total - reviewed
    return reviewed_done + (unreviewed if counts_as_done(None, submitted=submitted) else 0)
