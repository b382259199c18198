"""The audit queue: flagged outputs served to auditors one at a time, their verdicts, and what the audit page
and the API show of an item (the texts, each judge's answer, the quoted passages, the first-pass shading).

Serving. An auditor gets the next item of the project that they have not audited and that has fewer than
``audits_per_item`` audits answered or being served (an Audit row is made when the item is served), worst
first: the flagging judgement's figure ascending (a score, or 1 + 4p for an NLI judge; items added without
a flag last), then by id. Or, as the auditor chooses on the audit page (``order``: QUEUE_ORDERS), shuffled: a fixed
order of their own (a hash of their id and the item's), the same at every serve and unlike any other auditor's, which
tells a blind auditor nothing of how bad the flag said the output was. An auditor holds one unanswered serve at a
time: asking again gives the same item, whatever the order.
A serve holds its slot for SERVE_MINUTES: after that, another auditor may take the slot (the stale serve is
released then); until someone does, the auditor who walked away still has the item.

Answering. A score 1-5, or ``agreed`` (the score of the judge's answer the auditor was shown); an item is
answered once (a second answer to it is refused, but the same verdict sent again, by the page or the API, is taken
for a retry of the first and answered with it, nothing changed: ``submit_audit``). In blind mode the score given
before the judges' answers are shown is kept in the database (``give_blind_score``, written once) and the verdict
takes it as its ``blind_score``. The time per item is the server's: answered_at - served_at,
both read from ``clock.now()``, the one clock tests move (``monkeypatch.setattr(audits.clock, "now", ...)``).

Changing. An auditor may change their own saved verdict (the page's ``u``; the API's PUT /api/audits/<id>/, or
PATCH for some of its parts: ``amend_audit``), never another auditor's. A change keeps the first answer's ``answered_at`` and ``seconds`` (the time it took to read the
item and decide, which the figures use) and records when it was made in ``changed_at``; ``blind_score``, the score
given before the reveal, is never changed, and ``blind`` is again whether the final score is that one. ``changed_at``
is also the verdict's version: a change sent with the version it was made from (``seen``: the page's form always, an
API client when it sends ``base_changed_at``) is refused with VerdictChanged (409, nothing saved, the saved verdict
given back) when the verdict changed since, say in another tab; a change that leaves the saved verdict as it is
(a retry) is no conflict.

The clock while changing. The time spent changing a saved verdict counts for no item: not for the changed one (its
``seconds`` stay the first answer's: a correction is not a second decision), and not for the item the auditor
holds meanwhile. On the page, opening a saved verdict stops the held item's clock (``pause_item_clock``: a
ClockPause the page keeps in the session; opening another saved verdict, or the same one again, keeps the first
pause) and coming back to the item starts it again (``resume_item_clock``): its ``served_at`` moves forward by the
time the clock stood, so ``served_at`` is the moment the item's time counts from, not always the moment it was
served, and ``seconds`` = answered_at - served_at leaves the change out. A pause resumes once (only while
``served_at`` is still the one it stopped), never moves ``served_at`` past now, and does nothing once the item is
answered or its serve released. Moving ``served_at`` also holds the item's slot that much longer. The API has no
pause: a PUT takes no time on the server's clock between opening a verdict and changing it.

Listing. An auditor's saved verdicts, newest first, narrowed by judge, score, disagreement or the reasoning mark (the
"My audits" page; a project admin lists every auditor's): ``listing``.

Modules by topic: ``auditors`` (who audits, AuditError, the triage settings), ``view`` (what an item shows),
``queue`` (serving, progress), ``blind`` (the score given before the reveal), ``verdicts`` (answering, changing),
``listing`` (saved verdicts as a list) and ``clock``; callers use the names below.
"""

from judging.services.audits import clock
from judging.services.audits.auditors import AUDITOR_ROLES, AuditError, check_auditor, judging_settings_of
from judging.services.audits.blind import blind_score_of, give_blind_score, judges_shown, judges_were_shown
from judging.services.audits.listing import VerdictFilters, saved_verdicts, verdict_auditors, verdict_judges
from judging.services.audits.queue import (
    QUEUE_ORDERS,
    SERVE_MINUTES,
    SHUFFLED,
    WORST_FIRST,
    ClockPause,
    audit_progress,
    pause_item_clock,
    resume_item_clock,
    serve_next_audit,
)
from judging.services.audits.verdicts import (
    MAX_NOTE,
    UNCHANGED,
    VerdictChanged,
    VerdictSeen,
    amend_audit,
    change_audit,
    own_answered_audit,
    read_verdict_stamp,
    reasoning_refusal,
    submit_audit,
    verdict_stamp,
)
from judging.services.audits.view import (
    SHADES,
    item_view,
    judge_panels,
    latest_sample_judgements,
    output_sentences,
    score_text,
    sentence_shading,
    shown_judgement,
)

__all__ = [
    "AUDITOR_ROLES", "MAX_NOTE", "QUEUE_ORDERS", "SERVE_MINUTES", "SHADES", "SHUFFLED", "WORST_FIRST", "AuditError", "ClockPause", "amend_audit",
    "audit_progress", "blind_score_of", "change_audit", "check_auditor", "clock", "give_blind_score", "item_view", "judges_shown", "judges_were_shown",
    "judge_panels", "judging_settings_of", "latest_sample_judgements", "output_sentences", "own_answered_audit",
    "pause_item_clock", "reasoning_refusal", "resume_item_clock", "score_text", "sentence_shading",
    "serve_next_audit", "shown_judgement", "submit_audit", "VerdictFilters", "saved_verdicts", "verdict_auditors",
    "verdict_judges", "UNCHANGED", "VerdictChanged", "VerdictSeen", "read_verdict_stamp", "verdict_stamp",
]
