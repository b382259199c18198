"""Typed readers for environment settings; a bad value stops start-up loudly.

Each reader raises SettingError with a message naming the variable, its value
and what is expected. The entry points (manage.py, config/wsgi.py, the Celery
app) turn that error into one line on stderr and a non-zero exit, with no
traceback: a typo in a deployment's environment is not a bug in the code.
"""

from __future__ import annotations

import os
import re
import sys
import zoneinfo
from collections.abc import Iterator
from contextlib import contextmanager


class SettingError(ValueError):
    pass


def envstr(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def envbool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise SettingError(f"{name}={raw!r} is not a boolean; use true or false")


def envint(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r} is not a whole number; use digits, e.g. {default}") from None
    if minimum is not None and value < minimum:
        raise SettingError(f"{name}={raw!r} must be a whole number of {minimum} or more")
    return value


def envlist(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return [part.strip() for part in raw.split(",") if part.strip()]


def envtimezone(name: str, default: str) -> str:
    """An IANA time zone name (``Europe/Paris``), refused unless this machine's zone database knows it."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    zone = raw.strip()
    try:
        zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # ValueError: not a zone name ("/UTC", "zone.tab")
        raise SettingError(
            f"{name}={raw!r} is not a time zone this machine knows; use an IANA name such as UTC or Europe/Paris"
        ) from None
    return zone


_HEADER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def envheader(name: str) -> tuple[str, str] | None:
    """A ``HEADER,value`` pair such as Django's SECURE_PROXY_SSL_HEADER, or None when unset.

    The header may be written as Django keys it (``HTTP_X_FORWARDED_PROTO``) or as
    it travels (``X-Forwarded-Proto``); either becomes the ``HTTP_...`` key.
    """
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    parts = [part.strip() for part in raw.split(",")]
    if len(parts) != 2 or not parts[1] or not _HEADER_NAME.fullmatch(parts[0]):
        raise SettingError(
            f"{name}={raw!r} is not a header and its value; use e.g. HTTP_X_FORWARDED_PROTO,https"
        )
    header = parts[0].upper().replace("-", "_")
    if not header.startswith("HTTP_"):
        header = f"HTTP_{header}"
    return header, parts[1]


@contextmanager
def setting_errors_as_one_line(exit_code: int = 2) -> Iterator[None]:
    """Stop the process with the SettingError's message as one stderr line, no traceback."""
    try:
        yield
    except SettingError as error:
        print(f"FaithLab configuration error: {error}", file=sys.stderr, flush=True)
        raise SystemExit(exit_code) from None
