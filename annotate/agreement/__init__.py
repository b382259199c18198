"""Inter-annotator agreement on FaithBench sample labels and spans. Pure: no Django imports.

Alpha itself always comes from the ``krippendorff`` package. This package only
turns worst-pooled labels into what that package takes, guards the degenerate
cases (alpha undefined, said with a reason, never an exception), and adds the
views FaithBench reports: label schemes, pooled vs batch-mean, per annotator
pair, bootstrap intervals, span F1 and token-level alpha.

Data flow: ``BatchLabels`` or ``BatchCodes`` (one per batch) -> ``CodedLabels``
(every annotator x sample cell of every batch as integer arrays, built once by
``code_labels`` and independent of the scheme) -> per scheme, a value-count matrix (units x groups)
-> ``krippendorff.alpha(value_counts=...)``.

Split by topic, each module importing only those before it: ``schemes``
(label schemes, levels, aggregates), ``labels`` (inputs, coding of labels),
``alpha`` (compute_alpha and the fast histogram path), ``bootstrap``
(bootstrap intervals and pairwise alpha), ``spans`` (span F1 and pairwise
span agreement), ``tokens`` (token-level alpha). Callers import from
``annotate.agreement``; the names below are its whole interface.
"""

from __future__ import annotations

from annotate.agreement.alpha import compute_alpha
from annotate.agreement.bootstrap import (
    BOOTSTRAP_MAX_DRAWS,
    BOOTSTRAP_MIN_RESAMPLES,
    bootstrap_interval,
    bootstrap_intervals,
    bootstrap_resamples,
    pairwise_alpha,
)
from annotate.agreement.labels import (
    AlphaResult,
    BatchCodes,
    BatchLabels,
    CodedLabels,
    SampleKey,
    batch_mean_note,
    code_labels,
    reliability_matrix,
)
from annotate.agreement.schemes import (
    AGGREGATES,
    CATEGORIES,
    LEVELS,
    Scheme,
    SchemeError,
    check_aggregate,
    check_level,
    parse_scheme,
)
from annotate.agreement.spans import (
    SPAN_MODES,
    BatchSpans,
    Span,
    pairwise_span_agreement,
    pairwise_span_f1,
    span_f1,
)
from annotate.agreement.tokens import _token_bounds, summary_tokens, token_alpha

__all__ = [
    "AGGREGATES",
    "BOOTSTRAP_MAX_DRAWS",
    "BOOTSTRAP_MIN_RESAMPLES",
    "CATEGORIES",
    "LEVELS",
    "SPAN_MODES",
    "AlphaResult",
    "BatchCodes",
    "BatchLabels",
    "BatchSpans",
    "CodedLabels",
    "SampleKey",
    "Scheme",
    "SchemeError",
    "Span",
    "_token_bounds",  # tests check it against summary_tokens
    "batch_mean_note",
    "bootstrap_interval",
    "bootstrap_intervals",
    "bootstrap_resamples",
    "check_aggregate",
    "check_level",
    "code_labels",
    "compute_alpha",
    "pairwise_alpha",
    "pairwise_span_agreement",
    "pairwise_span_f1",
    "parse_scheme",
    "reliability_matrix",
    "span_f1",
    "summary_tokens",
    "token_alpha",
]
