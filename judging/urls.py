"""Pages of the judging app, one module per topic: judges and prompts, runs, the audit queue, judge vs people,
synthetic sets, downloads. Every path sits under /projects/<slug>/."""

from __future__ import annotations

from judging.views import audit, exports, judges, people, runs, synthetic

urlpatterns = [
    *judges.urlpatterns,
    *runs.urlpatterns,
    *audit.urlpatterns,
    *people.urlpatterns,
    *synthetic.urlpatterns,
    *exports.urlpatterns,
]
