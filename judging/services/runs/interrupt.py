"""Ctrl-C in a command that executes runs in the foreground (`judge`, `triage`): the run is cancelled, not left
"running" for a worker's restart to resume (and send the calls the user meant to stop).

While ``cancel_on_ctrl_c`` holds, the first SIGINT only sets a flag; the execution notices it between two waits for
answers (at most results.FLUSH_SECONDS later) and cancels its run as an admin's Cancel does: no new call is sent, the
calls already sent are waited for and their answers stored (judgements and call cache), and the run reads "Cancelled
by command (Ctrl-C in manage.py judge) at <time>". A second SIGINT stops at once, without waiting for the calls in
flight (KeyboardInterrupt, which the command turns into its one line and exit status 130).

The Celery worker never installs it: a worker's signals are Celery's (warm and cold shutdown), and a run a stopped
worker leaves goes on after its restart, as DESIGN.md asks.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

# The exit status of a command stopped by Ctrl-C, as a shell reports a process killed by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130

_requested = threading.Event()
_command = ["judge"]  # the command executing runs here, as a cancel names it (models.cancelling.command_canceller)


def requested() -> bool:
    """Whether a Ctrl-C asked the foreground execution to stop."""
    return _requested.is_set()


def command_name() -> str:
    """The command whose Ctrl-C cancels the run ("judge", "triage")."""
    return _command[0]


@contextmanager
def cancel_on_ctrl_c(command: str) -> Iterator[None]:
    """For the block: the first Ctrl-C asks the run executing here to be cancelled (``requested``) in the name of
    ``command``, the second raises KeyboardInterrupt. Outside the main thread (where no signal handler can be set)
    it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _command[0] = command
    previous = signal.getsignal(signal.SIGINT)

    def on_ctrl_c(signum: int, frame: object) -> None:
        if _requested.is_set():
            raise KeyboardInterrupt
        _requested.set()

    _requested.clear()
    signal.signal(signal.SIGINT, on_ctrl_c)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested.clear()
