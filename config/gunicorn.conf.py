"""gunicorn's settings for FaithLab: `gunicorn -c config/gunicorn.conf.py config.wsgi ...` (README, "Deploying for real").

A bad setting must stop the server with one line. Without this file each worker reads the settings itself, so with
``--workers 4`` the line came four times, and the master, reaping workers that exited while it was halting, could end
in HaltServer tracebacks and exit status 1. Here the master reads the settings once, before it opens its socket or
boots a worker, and stops with the line and status 4 (gunicorn's "App failed to load"), as config/wsgi.py does.
"""

from __future__ import annotations

import os
from typing import Any


def on_starting(server: Any) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    from config.env import setting_errors_as_one_line

    try:
        with setting_errors_as_one_line(exit_code=4):
            settings.INSTALLED_APPS  # noqa: B018 (touching it imports the settings module)
    except SystemExit:
        if server.pidfile is not None:  # created just before this hook
            server.pidfile.unlink()
        raise
