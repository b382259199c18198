from __future__ import annotations

from django.urls import path
from rest_framework.routers import DefaultRouter

from annotate.api import results
from annotate.api.views import ProjectViewSet, SampleViewSet, SpanViewSet

router = DefaultRouter()
router.register("projects", ProjectViewSet, basename="project")
router.register("samples", SampleViewSet, basename="sample")
router.register("spans", SpanViewSet, basename="span")
urlpatterns = router.urls
urlpatterns += [
    path("projects/<slug:slug>/agreement/", results.AgreementView.as_view(), name="api-agreement"),
    path("projects/<slug:slug>/halu-rates/", results.HaluRatesView.as_view(), name="api-halu-rates"),
    path("projects/<slug:slug>/detector-eval/", results.DetectorEvalView.as_view(), name="api-detector-eval"),
]
