from __future__ import annotations

from rest_framework.routers import DefaultRouter

from annotate.api.views import ProjectViewSet, SampleViewSet, SpanViewSet

router = DefaultRouter()
router.register("projects", ProjectViewSet, basename="project")
router.register("samples", SampleViewSet, basename="sample")
router.register("spans", SpanViewSet, basename="span")
urlpatterns = router.urls
