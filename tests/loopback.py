"""Servers the tests and benchmarks start on loopback: a free port for one, and whether it answers yet."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers(url: str) -> bool:
    """Whether ``url`` (a loopback http address) answers 200 now."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 (a loopback http URL)
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False
