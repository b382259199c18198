"""The judging JSON API under /api/: judges and runs (judging.api.judges), the audit queue (judging.api.audits)."""

from __future__ import annotations

from judging.api import audits, judges

urlpatterns = [*judges.urlpatterns, *audits.urlpatterns]
