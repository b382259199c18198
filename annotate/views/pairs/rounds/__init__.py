"""The round wizard (preview the funnel, then create the round) and a round's page, for a pairs project's admins.

Split by topic: ``form`` (the wizard's fields, read and checked), ``words`` (the funnel, the subsampling action
and why an item was drawn, in words), ``wizard`` (the wizard and the span vectors it needs first), ``jobs`` (a
round job's page and its cancel) and ``page`` (a round's page, and pairs_project: who may open the rounds'
pages). annotate.views.pairs.urls routes to the views named here.
"""

from __future__ import annotations

from annotate.views.pairs.rounds.jobs import round_job, round_job_cancel
from annotate.views.pairs.rounds.page import round_page
from annotate.views.pairs.rounds.wizard import round_new, vectors_start

__all__ = ["round_job", "round_job_cancel", "round_new", "round_page", "vectors_start"]
