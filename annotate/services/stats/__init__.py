"""Agreement and results of a project, read from the database: the one service behind them all.

The agreement, halu_rates and detector_eval commands, the results API and the
agreement, disputes and results pages all take their numbers from here
(the pages through the figure store in annotate.services.results_cache).

Reading is built for 100,000 samples: each figure set reads the rows it
needs once (values_list of the needed columns, no ORM objects, no default
ordering), span labels are read as JSON text and classified once per distinct
text, and the rows are turned into numpy arrays for the pure modules
annotate.agreement and annotate.results, which hold every rule. The page
figure sets (``results_figures``, ``agreement_figures``, ``span_figures``)
compute everything a page shows from one such read.

The package is split by topic, each module importing only those before it:
rosters, readers, agreement, verdicts, spans, figures.
"""

from __future__ import annotations

from annotate.services.stats.agreement import (
    batch_disputes,
    batch_labels,
    project_agreement,
    project_pairwise_alpha,
)
from annotate.services.stats.figures import agreement_figures, results_figures, span_figures
from annotate.services.stats.rosters import batch_submitters, no_round_message, project_rounds
from annotate.services.stats.spans import batch_spans, span_agreement
from annotate.services.stats.verdicts import (
    UNKNOWN_GENERATOR,
    SampleVerdict,
    challenging_groups,
    explained_detector_eval,
    explained_halu_rates,
    project_detector_eval,
    project_halu_rates,
    sample_worst_labels,
    worst_label_distribution,
)

__all__ = [
    "UNKNOWN_GENERATOR",
    "SampleVerdict",
    "agreement_figures",
    "batch_disputes",
    "batch_labels",
    "batch_spans",
    "batch_submitters",
    "challenging_groups",
    "explained_detector_eval",
    "explained_halu_rates",
    "project_agreement",
    "project_detector_eval",
    "project_halu_rates",
    "project_pairwise_alpha",
    "no_round_message",
    "project_rounds",
    "results_figures",
    "sample_worst_labels",
    "span_agreement",
    "span_figures",
    "worst_label_distribution",
]
