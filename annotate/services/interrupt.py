"""Ctrl-C in a command that executes background-style work in the foreground (`judge`, `triage`, `synthetic_set`,
`embed`, `perturb_pairs`): the work is cancelled, not left "running" for a worker's restart to resume (and redo or
send what the user meant to stop), and a later start is not refused or answered with the dead work.

While ``cancel_on_ctrl_c`` holds, the first SIGINT only sets a flag; the execution notices it at its next safe point
(a judge run between two waits for answers, a synthetic set between two answers, an embedding job after the group
of texts in hand, a perturbation job before its next original) and cancels its work as an admin's Cancel does, in
the command's name: "Cancelled by command (Ctrl-C in manage.py <command>) at <time>." (``command_canceller``). Whatever was committed stays, nothing is half-written (each write is its own transaction), the
command prints one line on stderr and exits with EXIT_INTERRUPTED. A second SIGINT stops at once: it raises
KeyboardInterrupt, which the command turns into its one line and ``stop_at_once``.

The Celery worker never installs it: a worker's signals are Celery's (warm and cold shutdown), and work a stopped
worker leaves goes on after its restart, as DESIGN.md asks. (Moved here from judging.services.runs.interrupt, which
still names the same functions and flag, so that annotate's jobs use it too.)
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

# The exit status of a command stopped by Ctrl-C, as a shell reports a process killed by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130

_requested = threading.Event()
_command = ["judge"]  # the command executing work here, as a cancel names it (models.cancelling.command_canceller)


# Who cancelled work a command was executing when it was told to stop (Ctrl-C): no user, so the work's message
# names the command, and judging's canceller_name reads it back from there.
COMMAND_CANCELLER = "command"


def command_canceller(command: str) -> str:
    """How a command's cancel names its canceller: "command (Ctrl-C in manage.py judge)"."""
    return f"{COMMAND_CANCELLER} (Ctrl-C in manage.py {command})"


def requested() -> bool:
    """Whether a Ctrl-C asked the foreground execution to stop."""
    return _requested.is_set()


def command_name() -> str:
    """The command whose Ctrl-C cancels the work ("judge", "triage", "embed", ...)."""
    return _command[0]


@contextmanager
def cancel_on_ctrl_c(command: str) -> Iterator[None]:
    """For the block: the first Ctrl-C asks the work executing here to be cancelled (``requested``) in the name of
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


def stop_at_once(message: str) -> NoReturn:
    """A second Ctrl-C: say so and leave now, without waiting for threads still working (calls in flight: the
    interpreter would join them at exit)."""
    sys.stdout.flush()
    sys.stderr.write(message + "\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)
