from __future__ import annotations

from django.urls import path

from annotate.views import annotation as views
from annotate.views import curation
from annotate.views import results as results_views

urlpatterns = [
    path("", views.home, name="home"),
    path("projects/new/", views.project_create, name="project-create"),
    path("projects/<slug:slug>/", views.project_detail, name="project"),
    path("projects/<slug:slug>/import/", views.project_import, name="project-import"),
    path("projects/<slug:slug>/members/", views.project_members, name="project-members"),
    path("projects/<slug:slug>/assign/", views.project_assign, name="project-assign"),
    path("projects/<slug:slug>/guidelines/", views.guidelines, name="guidelines"),
    path("projects/<slug:slug>/samples/<int:pk>/", views.sample_page, name="sample"),
    path("projects/<slug:slug>/jobs/<int:pk>/", views.job_status, name="job"),
    path("projects/<slug:slug>/exports/", views.project_export, name="project-export"),
    path("projects/<slug:slug>/batches/<int:pk>/round-two/", views.open_round_two, name="open-round-two"),
    path("projects/<slug:slug>/curation/", curation.curation_list, name="curation"),
    path("projects/<slug:slug>/curation/accept-agreed/", curation.accept_agreed, name="accept-agreed"),
    path("projects/<slug:slug>/curation/<int:pk>/", curation.adjudicate, name="adjudicate"),
    path("projects/<slug:slug>/exports/<int:pk>/download/", views.export_download, name="export-download"),
    path("projects/<slug:slug>/agreement/", results_views.agreement_page, name="agreement"),
    path("projects/<slug:slug>/agreement/exclusion/", results_views.agreement_exclusion, name="agreement-exclusion"),
    path("projects/<slug:slug>/disputes/", results_views.disputes_page, name="disputes"),
    path("projects/<slug:slug>/results/", results_views.results_page, name="results"),
    path("projects/<slug:slug>/results/selection/", results_views.results_selection, name="results-selection"),
]
