from __future__ import annotations

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from config.env import setting_errors_as_one_line

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# A bad setting stops the server with one line. Exit status 4 is gunicorn's "App failed to load":
# the master halts instead of booting worker after worker into the same error. (With the README's
# `-c config/gunicorn.conf.py` the master reads the settings first and stops before any worker.)
with setting_errors_as_one_line(exit_code=4):
    application = get_wsgi_application()

if settings.EMBEDDING_WARMUP:
    # Load the embedding model now, in a background thread, rather than in the first
    # similarity request (seconds). Requests that come before it is ready get a 503
    # asking them to retry. `runserver` imports this module too (WSGI_APPLICATION). In gunicorn's master
    # (config/gunicorn.conf.py, preload_app) it loads at once instead, for the workers it forks to share.
    from annotate import embedder

    embedder.start_loading()
