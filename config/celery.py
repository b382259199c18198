from __future__ import annotations

import os
from typing import Any

from celery import Celery

from config.env import setting_errors_as_one_line

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("faithlab")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_configure.connect
def _read_settings_or_stop(**kwargs: Any) -> None:
    """Read Django's settings before Celery does, so a bad value stops the worker with one line."""
    from django.conf import settings

    with setting_errors_as_one_line():
        settings.INSTALLED_APPS  # noqa: B018 (touching it imports the settings module)


def time_limits(hard: int, soft: int) -> dict[str, int]:
    """A task's ``time_limit`` and ``soft_time_limit``: its own, lowered to settings.CELERY_TASK_TIME_LIMIT and
    CELERY_TASK_SOFT_TIME_LIMIT where those are lower (limits set on a task win over Celery's settings)."""
    from django.conf import settings

    return {
        "time_limit": min(hard, settings.CELERY_TASK_TIME_LIMIT),
        "soft_time_limit": min(soft, settings.CELERY_TASK_SOFT_TIME_LIMIT),
    }
