"""The judging JSON API under /api/: judges and runs (judging.api.judges), the audit queue (judging.api.audits),
downloads of judgements and audits (judging.api.exports)."""

from __future__ import annotations

from judging.api import audits, exports, judges

urlpatterns = [*judges.urlpatterns, *audits.urlpatterns, *exports.urlpatterns]
