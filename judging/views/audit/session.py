"""What the audit page keeps in the session, per auditor and project: the blind-mode switch, the queue order chosen
(``?order=worst`` or ``?order=shuffled`` on the page's address; worst first until one is chosen), the items whose
judges were shown, and the held item's clock pause. The score given blind before the reveal is not kept here but in the
database (judging.services.audits.give_blind_score), so a session that ends before the verdict is saved loses nothing.

Sessions written before that kept it here, as ``pending`` (item id -> score). For one release such an entry is still
read: each score goes to the database (written once, with the moment it is read as its ``given_at``) where its item is
still served to the auditor, and the entry is written back without it. Remove ``_adopt_pending`` in the release after.

The session is one stored blob, and a request writes back all of it: a page load that read it before the blind
switch saved would, by writing, undo the switch (``b`` then a reload, both in flight). So a render that changes
nothing writes nothing, a write keeps a choice (the blind switch, the queue order) saved since the request read the
session, and the switch is saved at once rather than when its answer is ready.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotate.models import Project
from judging.models import Audit
from judging.services import audits
from judging.services.audits import AuditError

REMEMBERED_ITEMS = 50  # items whose reveal the session remembers, per project


@dataclass
class AuditSession:
    """What the session keeps for an auditor in one project."""

    default_blind: bool  # the project's blind_by_default
    choice: bool | None = None  # the auditor's own switch, once they used it
    revealed: list[int] = field(default_factory=list)  # items whose judges' answers were shown to the auditor
    pause: audits.ClockPause | None = None  # the held item's clock, stopped while a saved verdict is being changed
    stored: dict[str, Any] | None = None  # the entry as this request read it
    chose: bool = False  # this request set ``choice`` (the switch): it wins over a choice saved meanwhile
    order: str | None = None  # the queue order the auditor chose (audits.QUEUE_ORDERS); None: worst first
    chose_order: bool = False  # this request set ``order``: it wins over an order saved meanwhile

    @property
    def blind(self) -> bool:
        return self.default_blind if self.choice is None else self.choice

    @property
    def queue_order(self) -> str:
        """The order new items are served in: the auditor's choice, else worst first."""
        return self.order or audits.WORST_FIRST

    def choose_order(self, order: str) -> None:
        """The auditor's queue order (one of audits.QUEUE_ORDERS), kept until they choose again or log out."""
        self.order = order
        self.chose_order = True

    @staticmethod
    def key(project: Project) -> str:
        return f"judging-audit:{project.pk}"

    @classmethod
    def load(cls, request: Any, project: Project) -> AuditSession:
        default = audits.judging_settings_of(project).blind_by_default
        stored = request.session.get(cls.key(project))
        if not isinstance(stored, dict):
            return cls(default_blind=default)
        choice = stored.get("blind")
        session = cls(
            default_blind=default,
            choice=choice if isinstance(choice, bool) else None,
            order=stored.get("order") if stored.get("order") in audits.QUEUE_ORDERS else None,
            revealed=[int(pk) for pk in stored.get("revealed") or []],
            pause=audits.ClockPause.from_json(stored.get("pause")),
            stored=stored,
        )
        if stored.get("pending"):
            session._adopt_pending(request, project, stored["pending"])
        return session

    def _adopt_pending(self, request: Any, project: Project, pending: Any) -> None:
        """An entry from before blind scores were kept in the database: its scores go there (see the module
        docstring); the next save writes the entry without them."""
        for item_id, score in (pending.items() if isinstance(pending, dict) else []):
            try:
                audits.give_blind_score(project, request.user, int(item_id), int(score))
            except (AuditError, TypeError, ValueError):
                continue  # answered meanwhile, no longer served, or not a score: nothing to keep
        self.save(request, project)

    def choose(self, blind: bool) -> None:
        """The auditor's own switch."""
        self.choice = blind
        self.chose = True

    def save(self, request: Any, project: Project) -> None:
        """Keep the entry in the session, unless nothing changed (see the module docstring for why)."""
        self.revealed = self.revealed[-REMEMBERED_ITEMS:]
        entry: dict[str, Any] = {"blind": self.choice, "revealed": self.revealed}
        if self.pause is not None:
            entry["pause"] = self.pause.as_json()
        if self.order is not None:
            entry["order"] = self.order
        if entry == self.stored:
            return
        if not self.chose:
            entry["blind"] = self._choice_saved_since(request, project)
        if not self.chose_order:
            order = self._order_saved_since(request, project)
            entry.pop("order", None)
            if order is not None:
                entry["order"] = order
        request.session[self.key(project)] = entry
        self.stored = entry

    def _stored_now(self, request: Any, project: Project) -> Any:
        """The entry as the session store holds it now (another request may have saved since this one read it), or
        None when the session has no key yet."""
        session = request.session
        if session.session_key is None:
            return None
        return session.__class__(session_key=session.session_key).get(self.key(project))

    def _choice_saved_since(self, request: Any, project: Project) -> bool | None:
        """The choice as the session store holds it now: another request's switch, saved since this one read the
        session, or else this request's own."""
        read = (self.stored or {}).get("blind")
        now = self._stored_now(request, project)
        if isinstance(now, dict) and now.get("blind") != read and isinstance(now.get("blind"), bool | None):
            return now.get("blind")
        return self.choice

    def _order_saved_since(self, request: Any, project: Project) -> str | None:
        """The queue order as the session store holds it now (another request's choice, saved since this one read
        the session), or else this request's own: the blind switch's rule."""
        read = (self.stored or {}).get("order")
        now = self._stored_now(request, project)
        if isinstance(now, dict) and now.get("order") != read and now.get("order") in (*audits.QUEUE_ORDERS, None):
            return now.get("order")
        return self.order

    def hides(self, audit: Audit) -> bool:
        """Blind mode, and the auditor has neither seen this item's judges nor given it a blind score (which showed
        them). The database keeps both (JudgesShown, BlindScore), so this holds in a new session, another browser and
        after the API's queue showed them."""
        return (
            self.blind and audit.item_id not in self.revealed
            and audits.blind_score_of(audit.auditor_id, audit.item_id) is None
            and not audits.judges_were_shown(audit.auditor_id, audit.item_id)
        )

    def forget(self, item_id: int) -> None:
        if item_id in self.revealed:
            self.revealed.remove(item_id)

