"""The judging JSON API under /api/: judges and runs (judging.api.judges), the audit queue (judging.api.audits),
downloads of judgements and audits (judging.api.exports), a judge against people and a synthetic set's tables
(judging.api.figures)."""

from __future__ import annotations

from judging.api import audits, exports, figures, judges

urlpatterns = [*judges.urlpatterns, *audits.urlpatterns, *exports.urlpatterns, *figures.urlpatterns]
