"""Pages under /projects/<slug>/pairs/ (included from annotate/urls.py)."""

from __future__ import annotations

from django.urls import path

from annotate.views.pairs import flags as pair_flags
from annotate.views.pairs import labeling
from annotate.views.pairs import project as pair_project
from annotate.views.pairs import rounds as pair_rounds

urlpatterns = [
    path("label/", labeling.label_page, name="pairs-label"),
    path("import/", pair_project.pairs_import, name="pairs-import"),
    path("perturb/", pair_project.pairs_perturb, name="pairs-perturb"),
    path("perturb/jobs/<int:pk>/cancel/", pair_project.perturbation_job_cancel, name="pairs-perturb-job-cancel"),
    path("settings/", pair_project.pairs_settings, name="pairs-settings"),
    path("export/<str:fmt>/", pair_project.pairs_export, name="pairs-export"),
    path("vectors/", pair_rounds.vectors_start, name="pairs-vectors"),
    path("rounds/new/", pair_rounds.round_new, name="pairs-round-new"),
    path("rounds/jobs/<int:pk>/", pair_rounds.round_job, name="pairs-round-job"),
    path("rounds/jobs/<int:pk>/cancel/", pair_rounds.round_job_cancel, name="pairs-round-job-cancel"),
    path("rounds/<int:number>/", pair_rounds.round_page, name="pairs-round"),
    path("flags/", pair_flags.flags_page, name="pairs-flags"),
    path("flags/<int:pk>/block/", pair_flags.block, name="pairs-flag-block"),
    path("flags/<int:pk>/dismiss/", pair_flags.dismiss, name="pairs-flag-dismiss"),
    path("flags/judges/<int:pk>/unblock/", pair_flags.unblock, name="pairs-judge-unblock"),
]
