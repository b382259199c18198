"""What an operator lets a rubric judge's endpoint be given: which API-key variables are read and sent, to which hosts
(settings.FAITHLAB_JUDGE_KEYS), and which hosts a project admin who is not site staff may point a judge at (public
ones, and settings.FAITHLAB_JUDGE_HOSTS).

A project admin chooses a judge's base URL and the NAME of the variable holding its key; without these rules they
could have the server send any environment variable (SECRET_KEY, a database password) to a host of their own, or
make it call addresses inside the network (a cloud's metadata service, an admin port on loopback).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from fnmatch import fnmatchcase
from urllib.parse import urlsplit

from django.conf import settings

from judging.labels import setting_label

KEYS_SETTING = "FAITHLAB_JUDGE_KEYS"
HOSTS_SETTING = "FAITHLAB_JUDGE_HOSTS"

# How many operator commands (operator_command) run in this process now; while one does, any variable may be read.
_operator_commands = 0
_operator_lock = threading.Lock()


@contextmanager
def operator_command() -> Iterator[None]:
    """Around a management command that saves judges and executes their runs in its own process (`judge`, `triage`,
    `synthetic_set`): whoever runs it holds the server's environment already, so FAITHLAB_JUDGE_KEYS does not limit
    which variable it names. Pages, the API and the worker never enter it, so a judge a command stored is held to the
    list when it is run or edited there. Process-wide, not per thread: a run's calls go out from a thread pool."""
    global _operator_commands
    with _operator_lock:
        _operator_commands += 1
    try:
        yield
    finally:
        with _operator_lock:
            _operator_commands -= 1


def _where(base_url: str) -> tuple[str, int]:
    """The URL's host (lowercased, IPv6 without brackets) and port (the scheme's default when it gives none)."""
    parts = urlsplit(base_url)
    try:
        port = parts.port
    except ValueError:  # a port out of range: no rule names it
        port = -1
    return (parts.hostname or ""), port if port is not None else (443 if parts.scheme == "https" else 80)


def _host_matches(rule_host: str, rule_port: int | None, host: str, port: int) -> bool:
    return rule_host == host and (rule_port is None or rule_port == port)


def _shown_host(host: str, port: int | None) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"{shown}:{port}" if port is not None else shown


def key_allowed(name: str, base_url: str) -> bool:
    """Whether the variable ``name`` may be read and sent to the endpoint at ``base_url`` (FAITHLAB_JUDGE_KEYS)."""
    host, port = _where(base_url)
    return any(fnmatchcase(name, pattern) and (not rule_host or _host_matches(rule_host, rule_port, host, port))
               for pattern, rule_host, rule_port in settings.FAITHLAB_JUDGE_KEYS)


def allowed_keys_shown() -> str:
    """The allow-list as a refusal names it: "OPENAI_API_KEY for api.openai.com, MY_KEY_*"."""
    shown = [pattern + (f" for {_shown_host(host, port)}" if host else "")
             for pattern, host, port in settings.FAITHLAB_JUDGE_KEYS]
    return ", ".join(shown) if shown else "none"


def key_refusal(name: str, base_url: str) -> str:
    """Why the variable ``name`` is not read for the endpoint at ``base_url``, or "" (none needed, allowed, or asked
    for by an operator's command: operator_command)."""
    if not name or _operator_commands or key_allowed(name, base_url):
        return ""
    host, _ = _where(base_url)
    return (f"{setting_label('api_key_env')} {name} is not allowed for judges at {_shown_host(host, None)} (allowed: "
            f"{allowed_keys_shown()}): an operator adds it to {KEYS_SETTING} (NAME or NAME@host) in the environment "
            "of the web server and the worker.")


def host_listed(base_url: str) -> bool:
    """Whether the operator listed the URL's host (or host:port) in FAITHLAB_JUDGE_HOSTS."""
    host, port = _where(base_url)
    return any(_host_matches(rule_host, rule_port, host, port) for rule_host, rule_port in settings.FAITHLAB_JUDGE_HOSTS)


def is_public_address(address: str) -> bool:
    """Whether an IP address is a public one: not loopback, private (RFC 1918, unique-local IPv6), link-local (cloud
    metadata services), unspecified, multicast or reserved; IPv4 inside IPv6 (mapped, 6to4, NAT64) is judged as IPv4."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # an IPv6 zone ("fe80::1%eth0") is not part of it
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is None and ip in ipaddress.IPv6Network("64:ff9b::/96"):
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            return is_public_address(str(inner))
        if ip.is_site_local:
            return False
    return ip.is_global and not (ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified
                                 or ip.is_multicast or ip.is_reserved)


def host_refusal(base_url: str) -> str:
    """Why a project admin who is not site staff may not point a judge at ``base_url``, or "": its host is listed in
    FAITHLAB_JUDGE_HOSTS, or every address it resolves to (socket.getaddrinfo) is public."""
    if host_listed(base_url):
        return ""
    host, port = _where(base_url)
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, max(port, 0), type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError):
        what = "could not be resolved here, so it cannot be checked to be public"
    else:
        if addresses and all(is_public_address(address) for address in addresses):
            return ""
        what = ("is not a public address" if _is_ip_literal(host) else "resolves to an address that is not public")
        what += " (loopback, private, link-local or reserved)"
    return (f"{setting_label('base_url')}: the host {_shown_host(host, None)} {what}. A project admin may point a "
            "judge only at public hosts: for an Ollama "
            f"or vLLM server on this machine or your network, an operator lists it in {HOSTS_SETTING}, or site staff "
            "create the judge.")


def _is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True
