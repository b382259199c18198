"""A deadline for each chat request as a whole, however slowly the server answers (part of judging.clients)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator

import httpx2

# httpx's timeout (the SDK hands it on) bounds each wait for the next byte, not an attempt: a server that trickles a
# byte a second (keep-alive padding from a proxy, a stuck upstream) never trips it and holds the call for as long as
# it trickles. So every request gets a deadline, timeout_seconds after it starts (a request event hook), and its
# response body is read under a watchdog that ends the read at that deadline (_DeadlineStream, set up by a response
# hook); a response whose headers only arrive after the deadline is refused when they do. Either way the attempt ends
# as httpx's ReadTimeout, which the SDK turns into the same APITimeoutError as a server that never answers: counted
# as an attempt, retried, and reported as a timeout. Hooks rather than a transport: they also apply to requests
# that go through a proxy from the environment. What they cannot cut short is a status line and headers trickled
# byte by byte (httpx's per-read timeout still bounds each gap there); servers that trickle do it in the body.
_DEADLINE = "faithlab_attempt_deadline"


def _past_deadline(request: httpx2.Request) -> httpx2.ReadTimeout:
    return httpx2.ReadTimeout("The attempt ran past its deadline (judge setting timeout_seconds).", request=request)


class _DeadlineStream(httpx2.SyncByteStream):
    """A response body read until a deadline at most: past it the attempt ends as a read timeout.

    A timer thread shuts the connection's socket down at the deadline: that wakes a
    read blocked on a silent or trickling server at once (closing the socket from
    another thread would not), and the connection is dropped, never reused. The
    check after every chunk covers a connection whose socket is not known.
    """

    def __init__(
        self, body: httpx2.SyncByteStream, deadline: float, connection: socket.socket | None, request: httpx2.Request
    ) -> None:
        self._body = body
        self._deadline = deadline
        self._connection = connection
        self._request = request
        self._lock = threading.Lock()
        self._finished = False

    def _cut(self) -> None:
        with self._lock:
            if self._finished or self._connection is None:
                return
            try:
                # The plain socket's shutdown, also under TLS (an SSLSocket's own would drop its TLS state first).
                socket.socket.shutdown(self._connection, socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: nothing left to wake

    def __iter__(self) -> Iterator[bytes]:
        watchdog = threading.Timer(max(0.0, self._deadline - time.monotonic()), self._cut)
        watchdog.daemon = True
        watchdog.start()
        try:
            for chunk in self._body:
                if time.monotonic() >= self._deadline:
                    raise _past_deadline(self._request)
                yield chunk
        except httpx2.TransportError as error:
            # The watchdog's cut surfaces as a dropped connection: past the deadline, it is the timeout it stands for.
            if isinstance(error, httpx2.TimeoutException) or time.monotonic() < self._deadline:
                raise
            raise _past_deadline(self._request) from error
        finally:
            with self._lock:
                self._finished = True
            watchdog.cancel()

    def close(self) -> None:
        self._body.close()


def deadline_hooks(seconds: float) -> dict[str, list[Callable[..., None]]]:
    """httpx event hooks that bound every request, from its start to the last byte of its answer, by `seconds`."""

    def started(request: httpx2.Request) -> None:
        request.extensions[_DEADLINE] = time.monotonic() + seconds

    def answered(response: httpx2.Response) -> None:
        request = response.request
        deadline = request.extensions.get(_DEADLINE)
        if deadline is None:
            return
        if time.monotonic() >= deadline:
            raise _past_deadline(request)  # httpx closes the response (and drops its connection)
        network = response.extensions.get("network_stream")
        connection = network.get_extra_info("socket") if network is not None else None
        response.stream = _DeadlineStream(response.stream, deadline, connection, request)

    return {"request": [started], "response": [answered]}
