from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from annotate.models import Assignment, Batch, GoldLabel, Job, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services.projects import delete_project, results_of_other_projects

admin.site.register([Membership, Batch, Assignment, GoldLabel, Job])


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    """Deleting a project goes through ``delete_project``: its judge runs and synthetic sets point at its prompt
    versions with PROTECT, so Django's own delete would list them as protected and refuse, though they go with it."""

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, Any, list[Any]]:
        to_delete, model_count, perms_needed, _ = super().get_deleted_objects(objs, request)
        # The projects' own results are listed above, under each project, and delete_project deletes them first;
        # only rows of another project made with their prompt versions keep a project from being deleted.
        protected = [f"{row._meta.verbose_name.capitalize()}: {row}" for row in results_of_other_projects(objs)]
        return to_delete, model_count, perms_needed, protected

    def delete_model(self, request: HttpRequest, obj: Project) -> None:
        delete_project(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        with transaction.atomic():
            for project in queryset:
                delete_project(project)


@admin.register(Passage)
class PassageAdmin(admin.ModelAdmin):
    list_display = ["external_id", "project", "embedding_model"]
    exclude = ["embeddings"]


@admin.register(Sample)
class SampleAdmin(admin.ModelAdmin):
    list_display = ["id", "external_id", "batch", "generator"]
    list_filter = ["project", "batch"]
    exclude = ["embeddings"]


@admin.register(SpanAnnotation)
class SpanAdmin(admin.ModelAdmin):
    list_display = ["id", "sample", "annotator", "round", "text", "version"]
    list_filter = ["round"]
