"""The agreement page (sample-level alpha per scheme, per batch and pairwise; span agreement on request),
leaving an annotator out of one batch's agreement, and the disputes of one batch.

Admins and auditors only; the shared query reading and rendering are in annotate.views.figures.

Split by topic: ``query`` (the page's query), ``people`` (a batch's annotators: span counts, the few-spans mark,
leaving one out), ``tables`` (the figures as the page's tables), ``page`` (the agreement page) and ``disputes``
(one batch's disputes). annotate.urls routes to the views named here; the settings (LOW_ALPHA, BATCHES_PER_PAGE,
FEW_SPANS...) live in the module that uses them, where a test changes them.
"""

from __future__ import annotations

from annotate.views.agreement.disputes import disputes_page
from annotate.views.agreement.page import agreement_page
from annotate.views.agreement.people import agreement_exclusion, few_spans, mark_few_spans

__all__ = ["agreement_exclusion", "agreement_page", "disputes_page", "few_spans", "mark_few_spans"]
