from __future__ import annotations

from django.urls import include, path

from annotate.views import agreement as agreement_views
from annotate.views import annotation as views
from annotate.views import assignments as assignment_views
from annotate.views import browse as browse_views
from annotate.views import curation
from annotate.views import flags as flag_views
from annotate.views import jobs as job_views
from annotate.views import labelsets as labelset_views
from annotate.views import members as member_views
from annotate.views import results as results_views
from annotate.views import tokens as token_views

urlpatterns = [
    path("", views.home, name="home"),
    path("projects/new/", views.project_create, name="project-create"),
    path("projects/<slug:slug>/", views.project_detail, name="project"),
    path("projects/<slug:slug>/import/", views.project_import, name="project-import"),
    path("projects/<slug:slug>/members/", member_views.members_page, name="project-members"),
    path("projects/<slug:slug>/members/new/", member_views.member_create, name="member-create"),
    path("projects/<slug:slug>/members/<int:pk>/role/", member_views.member_role, name="member-role"),
    path("projects/<slug:slug>/members/<int:pk>/remove/", member_views.member_remove, name="member-remove"),
    path("projects/<slug:slug>/members/<int:pk>/set-password-link/", member_views.member_invitation,
         name="member-invitation"),
    path("projects/<slug:slug>/batches/<int:pk>/annotators/", assignment_views.batch_annotators,
         name="batch-annotators"),
    path("projects/<slug:slug>/assignments/<int:pk>/unassign/", assignment_views.unassign, name="unassign"),
    path("projects/<slug:slug>/assignments/<int:pk>/reassign/", assignment_views.reassign, name="reassign"),
    path("account/tokens/", token_views.token_list, name="api-tokens"),
    path("account/tokens/<int:pk>/revoke/", token_views.token_revoke, name="api-token-revoke"),
    path("projects/<slug:slug>/assign/", views.project_assign, name="project-assign"),
    path("projects/<slug:slug>/guidelines/", views.guidelines, name="guidelines"),
    path("projects/<slug:slug>/labels/", labelset_views.label_set, name="label-set"),
    path("projects/<slug:slug>/batches/<int:pk>/samples/", browse_views.batch_samples, name="batch-samples"),
    path("projects/<slug:slug>/flags/", flag_views.flags_page, name="flags"),
    path("projects/<slug:slug>/flags/<int:pk>/resolve/", flag_views.resolve_flag, name="flag-resolve"),
    path("projects/<slug:slug>/samples/<int:pk>/", views.sample_page, name="sample"),
    path("projects/<slug:slug>/jobs/<int:pk>/", job_views.job_status, name="job"),
    path("projects/<slug:slug>/jobs/<int:pk>/cancel/", job_views.job_cancel, name="job-cancel"),
    path("projects/<slug:slug>/exports/", views.project_export, name="project-export"),
    path("projects/<slug:slug>/batches/<int:pk>/round-two/", views.open_round_two, name="open-round-two"),
    path("projects/<slug:slug>/assignments/<int:pk>/reopen/", views.reopen_round, name="reopen-round"),
    path("projects/<slug:slug>/settings/", views.project_settings, name="project-settings"),
    path("projects/<slug:slug>/curation/", curation.curation_list, name="curation"),
    path("projects/<slug:slug>/curation/accept-agreed/", curation.accept_agreed, name="accept-agreed"),
    path("projects/<slug:slug>/curation/<int:pk>/", curation.adjudicate, name="adjudicate"),
    path("projects/<slug:slug>/exports/<int:pk>/download/", views.export_download, name="export-download"),
    path("projects/<slug:slug>/agreement/", agreement_views.agreement_page, name="agreement"),
    path("projects/<slug:slug>/agreement/exclusion/", agreement_views.agreement_exclusion, name="agreement-exclusion"),
    path("projects/<slug:slug>/disputes/", agreement_views.disputes_page, name="disputes"),
    path("projects/<slug:slug>/results/", results_views.results_page, name="results"),
    path("projects/<slug:slug>/results/selection/", results_views.results_selection, name="results-selection"),
    path("projects/<slug:slug>/pairs/", include("annotate.views.pairs.urls")),
]
