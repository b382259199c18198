"""When a failed chat request is tried again, and after how long: Retry-After (capped) or a backoff (part of
judging.clients)."""

from __future__ import annotations

import email.utils
import random
import time
from typing import Any

from tenacity import RetryCallState, wait_exponential_jitter

# A Retry-After longer than this is cut down: a run would rather retry and be refused again than sit idle for minutes.
# A call that still fails after such a cut wait says so in its error message (see capped_note).
RETRY_AFTER_CAP_SECONDS = 30.0
# Without Retry-After: 0.5 s, 1 s, 2 s, ... capped at 8 s, plus up to 0.25 s of jitter so parallel calls spread out.
_backoff = wait_exponential_jitter(initial=0.5, max=8.0, jitter=0.25)


class NotACompletion(Exception):
    """An HTTP 200 whose body is not a chat completion: an HTML error page a proxy sends with status 200, text that is
    not JSON, JSON with no ``choices``. Mid-run this is a passing fault of whatever stands in front of the server, so
    it is tried again as a 5xx is; ``body`` is what came (as text, "" when it could not be read)."""

    def __init__(self, body: str) -> None:
        super().__init__("HTTP 200 with a body that is not a chat completion")
        self.body = body


def is_transient(error: BaseException) -> bool:
    """Worth trying again: rate limits, server errors, timeouts, dropped connections and a 200 that is not a chat
    completion."""
    import openai

    if isinstance(error, NotACompletion):
        return True
    if isinstance(error, openai.APIConnectionError):  # timeouts included (APITimeoutError is a subclass)
        return True
    if isinstance(error, openai.APIStatusError):
        if error.status_code == 429:
            # OpenAI's "insufficient_quota" is a 429 that no wait will fix.
            return error.code != "insufficient_quota"
        return error.status_code >= 500 or error.status_code == 408
    return False


def _asked_wait(headers: Any) -> float | None:
    """The wait a response asks for (`retry-after-ms`, or `Retry-After` as seconds or an HTTP date), uncapped."""
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(float(milliseconds) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = moment.timestamp() - time.time()
    return max(seconds, 0.0)


def retry_after_seconds(headers: Any) -> float | None:
    """The wait a response asks for, capped at RETRY_AFTER_CAP_SECONDS; None if it asks for none."""
    asked = _asked_wait(headers)
    return None if asked is None else min(asked, RETRY_AFTER_CAP_SECONDS)


class RetryWaits:
    """Tenacity's wait between attempts (what Retry-After asks, capped, else the exponential backoff), and the waits
    that were cut short: `capped` holds what the endpoint asked for each wait longer than the cap that was waited."""

    def __init__(self) -> None:
        self.capped: list[float] = []
        self._asked: float | None = None

    def wait(self, state: RetryCallState) -> float:
        error = state.outcome.exception() if state.outcome is not None else None
        response = getattr(error, "response", None)
        self._asked = _asked_wait(getattr(response, "headers", None))
        if self._asked is None:
            return _backoff(state)
        # A little jitter on top of the server's wait, so calls told to wait alike do not return in one burst.
        return min(self._asked, RETRY_AFTER_CAP_SECONDS) + random.uniform(0.0, 0.05)

    def before_sleep(self, state: RetryCallState) -> None:
        # Tenacity also works out a wait after the last attempt, never waited: only a wait about to happen counts.
        if self._asked is not None and self._asked > RETRY_AFTER_CAP_SECONDS:
            self.capped.append(self._asked)


def capped_note(capped: list[float]) -> str:
    """The sentence a failure's message ends with when some of its waits were shorter than the endpoint asked."""
    waits = "a wait" if len(capped) == 1 else f"{len(capped)} waits"
    return (f" The endpoint asked for {waits} of up to {max(capped):.0f} s (Retry-After); FaithLab waits at most "
            f"{RETRY_AFTER_CAP_SECONDS:g} s (RETRY_AFTER_CAP_SECONDS), so it retried sooner than asked.")
