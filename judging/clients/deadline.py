"""A deadline for each chat request as a whole, however slowly the server answers (part of judging.clients)."""

from __future__ import annotations

import heapq
import itertools
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
    return httpx2.ReadTimeout("The attempt ran past its deadline (the judge's timeout).", request=request)


class _Alarm:
    """What the watchdog needs of one response being read: the connection to shut at the deadline, until it is read.

    A socket shutdown wakes a read blocked on a silent or trickling server at once
    (closing the socket from another thread would not), and the connection is
    dropped, never reused. Once the body is read the alarm lets go of the socket,
    so the watchdog's list holds nothing of the response.
    """

    __slots__ = ("deadline", "_connection", "_lock")

    def __init__(self, deadline: float, connection: socket.socket | None) -> None:
        self.deadline = deadline
        self._connection = connection
        self._lock = threading.Lock()

    def ring(self) -> None:
        with self._lock:
            if self._connection is None:
                return  # read in time, or no socket known
            try:
                # The plain socket's shutdown, also under TLS (an SSLSocket's own would drop its TLS state first).
                socket.socket.shutdown(self._connection, socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: nothing left to wake

    def disarm(self) -> None:
        with self._lock:
            self._connection = None


class _Watchdog:
    """One thread for every response being read, ringing each alarm at its deadline.

    A timer thread per request cost about 0.6 ms of CPU a call in a judge run at
    concurrency 32 (bench/bench_judge_run.py), an eighth of the app's own cost. The
    thread starts on first use (and again in a forked worker process, where the
    parent's thread does not exist).
    """

    def __init__(self) -> None:
        self._due: list[tuple[float, int, _Alarm]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, alarm: _Alarm) -> None:
        with self._wake:
            heapq.heappush(self._due, (alarm.deadline, next(self._order), alarm))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="faithlab-chat-deadlines", daemon=True)
                self._thread.start()
            elif self._due[0][2] is alarm:
                self._wake.notify()  # the new alarm is the next one due: the thread sleeps too long otherwise

    def _run(self) -> None:
        while True:
            with self._wake:
                while True:
                    now = time.monotonic()
                    if self._due and self._due[0][0] <= now:
                        alarm = heapq.heappop(self._due)[2]
                        break
                    self._wake.wait(self._due[0][0] - now if self._due else None)
            alarm.ring()


_watchdog = _Watchdog()


class _DeadlineStream(httpx2.SyncByteStream):
    """A response body read until a deadline at most: past it the attempt ends as a read timeout.

    The watchdog shuts the connection's socket down at the deadline (see _Alarm); the
    check after every chunk covers a connection whose socket is not known.
    """

    def __init__(
        self, body: httpx2.SyncByteStream, deadline: float, connection: socket.socket | None, request: httpx2.Request
    ) -> None:
        self._body = body
        self._deadline = deadline
        self._alarm = _Alarm(deadline, connection)
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        _watchdog.arm(self._alarm)
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
            self._alarm.disarm()

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
