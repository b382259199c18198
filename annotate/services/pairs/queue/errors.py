"""The queue's refusals: each carries the HTTP status and the short code the API answers with."""

from __future__ import annotations

from typing import Any


class PairQueueError(Exception):
    """Refused: ``status`` is the HTTP status the API answers with, ``code`` a short name, the message says why."""

    status = 409
    code = "conflict"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotAJudge(PairQueueError):
    """No role in the project (status 404: its existence is not revealed), or a role that does not judge (403)."""

    code = "not_a_judge"

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message)
        self.status = status


class JudgeBlocked(PairQueueError):
    status = 403
    code = "blocked"


class BadLabel(PairQueueError):
    status = 400
    code = "bad_label"
    field = "label"


class NoSuchItem(PairQueueError):
    status = 404
    code = "no_such_item"


class AlreadyJudged(PairQueueError):
    """The judge answered the item before; ``judgement`` is that answer, so a retry of it can be told apart."""

    code = "already_judged"

    def __init__(self, message: str, judgement: Any = None) -> None:
        super().__init__(message)
        self.judgement = judgement


class NotServed(PairQueueError):
    code = "not_served"


class ServeExpired(PairQueueError):
    code = "serve_expired"


class RoundClosed(PairQueueError):
    code = "round_closed"


class NothingToUndo(PairQueueError):
    code = "nothing_to_undo"
