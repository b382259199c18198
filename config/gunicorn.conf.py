"""gunicorn's settings for FaithLab: `gunicorn -c config/gunicorn.conf.py config.wsgi ...` (README, "Deploying for real").

A bad setting must stop the server with one line. Without this file each worker reads the settings itself, so with
``--workers 4`` the line came four times, and the master, reaping workers that exited while it was halting, could end
in HaltServer tracebacks and exit status 1. Here the master reads the settings once, before it opens its socket or
boots a worker, and stops with the line and status 4 (gunicorn's "App failed to load"): config/wsgi.py does it as the
master imports the app (preload_app, below), and on_starting again should the app ever be imported in the workers.

The master also imports the app before it forks the workers (preload_app), so that they share one copy of the
embedding model instead of loading one each; the settings below say why and what keeps it safe. Measured figures:
docs/performance.md, "gunicorn workers' memory and first requests".
"""

from __future__ import annotations

import gc
import os
from typing import Any

from annotate import embedder

# Each worker answers selections with the embedding model (torch, transformers, the weights: 390 MiB of its own memory
# when each worker loads a copy). Imported once in the master, before the fork, the workers share those pages
# copy-on-write: about 490 MiB once and 45 MiB a worker (4 workers: 650 MiB in all instead of 1.7 GB; README,
# "Deploying for real", sizing). A worker also answers its first selection at once, with no 503 "loading" while it
# loads a model, after a crash too. The price: the master reads the code once, so `kill -HUP` no longer brings in new
# code; restart gunicorn instead.
preload_app = True
# The master loads the weights in this thread and encodes nothing before the fork (embedder.load_for_forked_workers
# says why); each worker warms up after it (post_fork). The call must come before gunicorn imports config.wsgi.
embedder.load_for_forked_workers()


# gunicorn (25.1 and later) opens a control socket for its `gunicornc` tool unless told not to, at one path for every
# gunicorn its user runs: $XDG_RUNTIME_DIR/gunicorn.ctl, or ~/.gunicorn/gunicorn.ctl. A second server (another
# deployment, the test suite beside a real server) deletes the first one's socket and listens there itself, so
# gunicornc would reload, resize or stop the wrong server, and the first to stop deletes the other's. FaithLab uses
# none of it: the master's signals do the same (TERM, HUP, TTIN/TTOU). Off, rather than moved into FAITHLAB_DATA_DIR,
# which several machines may mount (README, "Deploying for real"); the master then also forks its workers with no
# thread but its main one.
control_socket_disable = True


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
    from django.urls import get_resolver

    # Django imports the URL modules, and with them every view, serializer and service, at the first request: here,
    # once, in the master, rather than in each worker's first request (which took 0.5-1.7 s on 2 cores; and each
    # worker kept 66 MiB of its own instead of 42).
    get_resolver().url_patterns  # noqa: B018


def pre_fork(server: Any, worker: Any) -> None:
    from django.db import connections

    # A database connection must never be shared by two processes; the master opens none, and this keeps it so.
    connections.close_all()
    # Keep every object the master made out of the collector's reach: collecting in a worker would otherwise write to
    # the shared pages holding them and copy each one into that worker (167 MiB of its own instead of 42).
    gc.freeze()


def post_fork(server: Any, worker: Any) -> None:
    embedder.after_fork()
