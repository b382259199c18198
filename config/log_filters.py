"""Logging filters named in settings.LOGGING.

Django 5.2 logs a PermissionDenied raised by a view with its traceback
(``django.utils.log.log_response`` passes the exception as ``exc_info``). Our
views raise it on purpose (``annotate.access.Forbidden``: an auditor asking
for the labeling page, an annotator posting to an admin form), so those
tracebacks are noise that hides the real errors. ``RefusalWithoutTraceback``
turns such a record into one warning line that says who was refused, where
and why; every other record, a 500's traceback included, passes unchanged.

A request whose Host header is not in ALLOWED_HOSTS (a scanner, a proxy that
passes the wrong name) is logged on ``django.security.DisallowedHost`` with
its traceback too; ``DisallowedHostWithoutTraceback`` makes it one warning
line with the host and the path.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import DisallowedHost, PermissionDenied


def _one_line(text: str) -> str:
    """Text from the request or the exception, escaped as Django escapes paths: no forged log lines."""
    return text.encode("unicode_escape").decode("ascii")


def _who(request: Any) -> str:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return "anonymous"
    return _one_line(user.get_username())


class RefusalWithoutTraceback(logging.Filter):
    """On ``django.request``: a deliberate PermissionDenied becomes a warning with user, path and reason.

    A 403 answered as a response (the API's refusals; on ``django.security.csrf``,
    a CSRF failure) is one line already; it gets the user added, so every
    refusal says whose it was.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        # Logging configured twice attaches this filter twice (dictConfig adds a logger's filters without removing
        # the old ones, and runserver runs django.setup() once more when it imports config.wsgi): the record is
        # rewritten once, whichever instance comes second.
        if getattr(record, "faithlab_refusal_rewritten", False):
            return True
        record.faithlab_refusal_rewritten = True
        refusal = record.exc_info[1] if record.exc_info else None
        request = getattr(record, "request", None)
        if isinstance(refusal, PermissionDenied):
            path = _one_line(request.path) if request is not None else "?"
            record.msg = "Forbidden: %s (user %s): %s"
            record.args = (path, _who(request), _one_line(str(refusal)) or "permission denied")
            record.exc_info = None
            record.exc_text = None
        elif refusal is None and getattr(record, "status_code", None) == 403 and isinstance(record.args, tuple) \
                and record.args:
            record.msg = f"{record.msg} (user %s)"
            record.args = (*record.args, _who(request))
        return True


class DisallowedHostWithoutTraceback(logging.Filter):
    """On ``django.security.DisallowedHost``: one warning line with Django's reason (it quotes the host) and the path."""

    def filter(self, record: logging.LogRecord) -> bool:
        refusal = record.exc_info[1] if record.exc_info else None
        if isinstance(refusal, DisallowedHost):
            request = getattr(record, "request", None)
            record.msg = "%s (path %s)"
            # Django quotes the host with repr(): its message holds no line break of the sender's.
            record.args = (str(refusal), _one_line(request.path) if request is not None else "?")
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True
