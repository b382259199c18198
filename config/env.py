"""Typed readers for environment settings; a bad value stops start-up loudly.

Each reader raises SettingError with a message naming the variable, its value
and what is expected. The entry points (manage.py, config/wsgi.py, the Celery
app, gunicorn's master through config/gunicorn.conf.py) turn that error into
one line on stderr and a non-zero exit, with no traceback: a typo in a
deployment's environment is not a bug in the code.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import sys
import tempfile
import zoneinfo
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


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


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def envloglevel(name: str, default: str) -> str:
    """One of logging's standard level names, in any case (``debug``), as logging wants it (``DEBUG``)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    level = raw.strip().upper()
    if level not in LOG_LEVELS:
        raise SettingError(f"{name}={raw!r} is not a log level; use one of {', '.join(LOG_LEVELS)} (any case)")
    return level


def writable_folder(name: str, folder: Path) -> Path:
    """``folder``, created if missing, refused unless this process can create files in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise SettingError(
            f"{name}={str(folder)!r} is not a folder this process can write to ({reason}); "
            "point it at a writable folder"
        ) from None
    return folder


def broker_url(name: str, default: str) -> str:
    """A Celery broker URL whose transport kombu knows (``redis://``, ``amqp://``, ``filesystem://``...).

    Only the scheme is named in a refusal: the rest of the URL may hold a password.
    """
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    url = raw.strip()
    # Celery takes several URLs separated by ";" (fail-over), and kombu a "transport+url" form (sqla+postgresql://).
    for one in url.split(";"):
        scheme, separator, _ = one.strip().partition("://")
        problem = _broker_problem(one.strip()) if separator else None
        if not separator or problem:
            what = f"(scheme {scheme!r}) is not a broker URL this install can use ({problem})" if separator else \
                "is not a URL (no scheme://)"
            raise SettingError(
                f"{name} {what}; use e.g. redis://host:6379/0, amqp://user:pass@host:5672// or filesystem://"
            )
    return url


def _broker_problem(url: str) -> str | None:
    """Why kombu cannot make this URL's transport (unknown, or its client library missing), without connecting."""
    from kombu import Connection  # comes with Celery; only a broker URL set in the environment needs it here
    from kombu.transport import resolve_transport

    transport = url.partition("://")[0].partition("+")[0]
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", transport):
        return "no such transport"  # a dotted name would be imported as a module: not from the environment
    try:
        resolve_transport(transport)
    except KeyError:
        return "no such transport"
    except ImportError as error:
        return f"its client library is missing: {error}"
    except AttributeError:  # kombu's redis module, imported without the redis package
        return "its client library is missing"
    # kombu warns about rediss:// without ssl options as it builds one; the worker says so itself, in its log.
    kombu_log, quiet = logging.getLogger("kombu.connection"), lambda record: False
    kombu_log.addFilter(quiet)
    try:
        Connection(url).transport  # noqa: B018 (building it checks its client library and the URL's parts)
    except ImportError as error:
        return f"its client library is missing: {error}"
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        return f"malformed: {type(error).__name__}"
    finally:
        kombu_log.removeFilter(quiet)
    return None


_KEY_NAME = re.compile(r"[A-Za-z0-9_*]+")
_HOST_NAME = re.compile(r"[a-z0-9_]([a-z0-9_.-]*[a-z0-9_])?")


def _host_port(text: str) -> tuple[str, int | None] | None:
    """``host``, ``host:port``, ``[v6]`` or ``[v6]:port`` as (host lowercased, without brackets; port or None)."""
    text = text.strip().lower()
    port: str | None = None
    if text.startswith("["):
        host, bracket, rest = text[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] if rest else None
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return None
    else:
        host, colon, port_text = text.partition(":")
        port = port_text if colon else None
        if not _HOST_NAME.fullmatch(host):
            return None
    if port is not None and not (port.isdigit() and 1 <= int(port) <= 65535):
        return None
    return host, int(port) if port is not None else None


def envkeyhosts(name: str, default: str) -> tuple[tuple[str, str, int | None], ...]:
    """Entries ``NAME`` or ``NAME@host`` (host or host:port; NAME may hold fnmatch's ``*``), comma-separated, as
    (name pattern, host lowercased or "" for any host, port or None for any port): FAITHLAB_JUDGE_KEYS."""
    raw = os.environ.get(name)
    text = default if raw is None or raw.strip() == "" else raw
    rules = []
    for entry in (part.strip() for part in text.split(",")):
        if not entry:
            continue
        pattern, at, where = entry.partition("@")
        host_port = _host_port(where) if at else ("", None)
        if not _KEY_NAME.fullmatch(pattern) or host_port is None:
            raise SettingError(
                f"{name}={raw!r}: {entry!r} is not NAME or NAME@host (host or host:port, NAME may use *); "
                "use e.g. OPENAI_API_KEY@api.openai.com,VLLM_KEY@localhost:8001"
            )
        rules.append((pattern, *host_port))
    return tuple(rules)


def envhosts(name: str) -> tuple[tuple[str, int | None], ...]:
    """Hosts or host:port entries, comma-separated, as (host lowercased, port or None for any): FAITHLAB_JUDGE_HOSTS."""
    raw = os.environ.get(name) or ""
    hosts = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        host_port = _host_port(entry)
        if host_port is None:
            raise SettingError(f"{name}={raw!r}: {entry!r} is not a host or host:port; use e.g. "
                               "localhost:11434,10.0.0.5:8001")
        hosts.append(host_port)
    return tuple(hosts)


def envfolders(name: str) -> tuple[Path, ...]:
    """Absolute folders, comma-separated (``~`` expanded), or () when unset: FAITHLAB_NLI_MODEL_DIRS."""
    raw = os.environ.get(name) or ""
    folders = []
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        folder = Path(entry).expanduser()
        if not folder.is_absolute():
            raise SettingError(f"{name}={raw!r}: {entry!r} is not an absolute folder; use e.g. "
                               "/srv/models,/home/faithlab/.cache/huggingface/hub")
        folders.append(folder)
    return tuple(folders)


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
