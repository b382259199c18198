"""The next-item queue of pair judges, their answers, and undo.

Serving an item creates its judgement unanswered (label "") and takes one of
the item's slots (``PairItem.taken``); the answer fills the label in. The
queue never lets ``taken`` pass ``judges_needed``: on PostgreSQL the candidate
is picked with ``SELECT ... FOR UPDATE SKIP LOCKED`` (two judges asking at once
get different items instead of waiting for each other), and the claim is a
conditional UPDATE (``taken < judges_needed``) that succeeds or changes
nothing, so it holds on SQLite too (whose transactions here take the write
lock at BEGIN). Each judge's requests in a project run one at a time: they
start by locking the judge's membership row. That is what keeps a judge to
one outstanding serve even with the page open in two tabs.

An unanswered serve holds its slot for ``PairConfig.serve_minutes``. After
that it is released lazily, the next time anyone asks for an item: its slot
goes back to the item, and the row stays as an uncounted, unanswered
judgement. Keeping the row (rather than deleting it) means the judge is
never served that item again, and a late answer gets a precise 409 when the
slot has gone to someone else in the meantime, or is taken back and
accepted when the item still has room.

The API's answer-and-next (``record_and_serve_next``) is one transaction:
lock the judge, record the answer, run the spammer rules, claim the next
item; the texts to show and the progress are read after the commit, so
item rows stay locked only while they are written. Once it holds the
answered item nothing in it waits for another transaction (expired serves
and candidates others hold are skipped), so answers cannot deadlock.

The server's clock is ``locks.now()``, the one seam tests move to make a
judge fast or slow without sleeping (``monkeypatch.setattr(locks, "now",
...)``); every module of the package reads it through ``locks``, so it is
deliberately not re-exported here (patching a copy here would move nothing).

The package, by topic: ``errors`` (the refusals), ``locks`` (the clock, the
judge's lock, row locks and the hand-written SQL), ``outcome`` (deciding an
item from its answers), ``serving`` (release, pick, claim, show) and
``answering`` (answer, answer-and-next, undo, progress). Other code imports
the names below from the package.
"""

from __future__ import annotations

from annotate.services.pairs.queue.answering import (
    LABELS,
    Answered,
    judge_progress,
    record_and_serve_next,
    record_judgement,
    undo_last_judgement,
)
from annotate.services.pairs.queue.errors import (
    AlreadyJudged,
    BadLabel,
    JudgeBlocked,
    NoSuchItem,
    NotAJudge,
    NothingToUndo,
    NotServed,
    PairQueueError,
    RoundClosed,
    ServeExpired,
)
from annotate.services.pairs.queue.locks import JUDGE_ROLES, blocked_message, check_judge_role, lock_rows
from annotate.services.pairs.queue.outcome import JUDGED_STATES, recompute_item, recount_items
from annotate.services.pairs.queue.serving import other_spans, serve_next_item

__all__ = [
    "JUDGED_STATES",
    "JUDGE_ROLES",
    "LABELS",
    "AlreadyJudged",
    "Answered",
    "BadLabel",
    "JudgeBlocked",
    "NoSuchItem",
    "NotAJudge",
    "NotServed",
    "NothingToUndo",
    "PairQueueError",
    "RoundClosed",
    "ServeExpired",
    "blocked_message",
    "check_judge_role",
    "judge_progress",
    "lock_rows",
    "other_spans",
    "recompute_item",
    "record_and_serve_next",
    "record_judgement",
    "recount_items",
    "serve_next_item",
    "undo_last_judgement",
]
