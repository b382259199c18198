from __future__ import annotations

from django.urls import path, re_path
from rest_framework.routers import DefaultRouter

from annotate.api import pairs, results
from annotate.api.assignments import BatchAssignmentsView
from annotate.api.batches import BatchViewSet
from annotate.api.imports import ProjectImportView
from annotate.api.jobs import CancelEmbeddingJobView, CancelExportJobView, ProjectJobView
from annotate.api.members import MemberDetailView, MemberListView
from annotate.api.projects import ProjectViewSet
from annotate.api.samples import SampleViewSet
from annotate.api.spans import SpanViewSet

# No ".json" suffix routes: the API speaks JSON only, the schema leaves them out, and the viewsets' actions
# take no format argument (every suffixed action answered 500).
router = DefaultRouter()
router.include_format_suffixes = False
router.register("projects", ProjectViewSet, basename="project")
router.register("samples", SampleViewSet, basename="sample")
router.register("spans", SpanViewSet, basename="span")
router.register("batches", BatchViewSet, basename="batch")
urlpatterns = router.urls
urlpatterns += [
    path("projects/<slug:slug>/agreement/", results.AgreementView.as_view(), name="api-agreement"),
    path("projects/<slug:slug>/halu-rates/", results.HaluRatesView.as_view(), name="api-halu-rates"),
    path("projects/<slug:slug>/detector-eval/", results.DetectorEvalView.as_view(), name="api-detector-eval"),
]
# Running a campaign from a script: members, imports, a batch's assignments (admins) and a job's progress, as the
# members page, the import forms, the Assign form and the project page's job lines do them.
# A username is what Django's username validator allows ([\w.@+-]); any other names no member (404).
urlpatterns += [
    path("projects/<slug:slug>/members/", MemberListView.as_view(), name="api-members"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/members/(?P<username>[\w.@+-]+)/$", MemberDetailView.as_view(),
            name="api-member"),
    path("projects/<slug:slug>/imports/", ProjectImportView.as_view(), name="api-imports"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/jobs/(?P<id>[0-9]{1,18})/$", ProjectJobView.as_view(),
            name="api-project-job"),
    # A span project's embedding or export job that no worker runs (admins), as its line on the project page does.
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/embedding-jobs/(?P<id>[0-9]{1,18})/cancel/$",
            CancelEmbeddingJobView.as_view(), name="api-embedding-job-cancel"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/export-jobs/(?P<id>[0-9]{1,18})/cancel/$",
            CancelExportJobView.as_view(), name="api-export-job-cancel"),
    re_path(r"^batches/(?P<id>[0-9]{1,18})/assignments/$", BatchAssignmentsView.as_view(),
            name="api-batch-assignments"),
]
# Pairs (HaDes): ids as [0-9]{1,18}, like the routers' lookups, so a longer number names no object (404, not 500).
urlpatterns += [
    path("pairs/", pairs.PairItemListView.as_view(), name="api-pairs"),
    path("pairs/next/", pairs.NextPairView.as_view(), name="api-pairs-next"),
    path("pairs/undo/", pairs.UndoPairView.as_view(), name="api-pairs-undo"),
    re_path(r"^pairs/(?P<id>[0-9]{1,18})/judgements/$", pairs.PairJudgementView.as_view(), name="api-pair-judgements"),
    path("projects/<slug:slug>/pair-rounds/", pairs.PairRoundListView.as_view(), name="api-pair-rounds"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/pair-rounds/(?P<number>[0-9]{1,18})/$",
            pairs.PairRoundDetailView.as_view(), name="api-pair-round"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/pair-round-jobs/(?P<id>[0-9]{1,18})/cancel/$",
            pairs.CancelRoundJobView.as_view(), name="api-pair-round-job-cancel"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/perturbation-jobs/(?P<id>[0-9]{1,18})/cancel/$",
            pairs.CancelPerturbationJobView.as_view(), name="api-perturbation-job-cancel"),
    path("projects/<slug:slug>/pair-agreement/", pairs.PairAgreementView.as_view(), name="api-pair-agreement"),
    path("projects/<slug:slug>/flags/", pairs.JudgeFlagListView.as_view(), name="api-judge-flags"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/flags/(?P<id>[0-9]{1,18})/block/$", pairs.BlockJudgeView.as_view(),
            name="api-judge-flag-block"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/flags/(?P<id>[0-9]{1,18})/unblock/$",
            pairs.UnblockJudgeView.as_view(), name="api-judge-flag-unblock"),
    re_path(r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/flags/(?P<id>[0-9]{1,18})/dismiss/$",
            pairs.DismissFlagView.as_view(), name="api-judge-flag-dismiss"),
]
