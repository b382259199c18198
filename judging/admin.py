from __future__ import annotations

from django.contrib import admin

from judging.models import Audit, AuditItem, Judge, JudgeRun, JudgingSettings, PromptVersion, SyntheticSet

admin.site.register([PromptVersion, JudgingSettings, AuditItem, Audit, SyntheticSet])


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    # The API key is never stored; only the name of the variable that holds it.
    list_display = ["name", "project", "kind", "model", "api_key_env", "concurrency"]
    list_filter = ["project", "kind"]


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ["id", "judge", "scope", "purpose", "status", "done", "total", "calls", "cached"]
    list_filter = ["status", "purpose"]
