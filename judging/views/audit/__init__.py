"""The audit page: one flagged output at a time, keyboard first, for the project's auditors and admins.

The page and its htmx endpoints answer with the whole page, or with its ``audit_view`` partial for htmx (200
when done; 400 or 409 with the message, nothing changed). Serving and answering go through
judging.services.audits, the same rules the API follows.

Blind mode (a per-project choice kept in the session, default from the project's ``blind_by_default``): the
judges' answers are not in the page until the auditor gives a score. That score goes to the ``reveal``
endpoint, which keeps it in the database, once (judging.services.audits.give_blind_score; an Audit's score means
"answered", so it is not written there) and answers with the judges revealed; the final verdict keeps that score as
``blind_score``, and is ``blind`` when its score is the one given blind, even if the login session ended meanwhile.

Changing a saved verdict (``u``): the page keeps, per browser tab, the audits saved on it, and ``u`` asks for the
latest one's ``answered`` view (GET), the item with its saved verdict and its judges shown, whose form changes it
(POST) and answers with the auditor's current item. Only one's own answered audit: another auditor's is 403. A verdict
saved in another tab or browser is found on "My audits" (``mine``), whose Change opens the same view.

The item clock meanwhile: the minutes spent changing an old verdict belong to no item. Showing an answered audit
stops the clock of the item the auditor holds (a pause kept in the session: a reload of the change page, u to the
verdict before, or a second tab keeps the first pause); the next time the page shows the current item (Esc, the
change saved, a reload, another tab) the clock goes on with ``served_at`` moved forward by the time it stood, so
the clock on the page and the seconds the verdict records agree and leave that time out. A change abandoned (the
tab closed) is resumed when the auditor next opens the page, the time away left out as well. An item answered
from a tab that kept showing it meanwhile keeps its whole time: that tab's clock ran on. A pause resumes once,
and never moves ``served_at`` past now (judging.services.audits.queue), so no time is negative or left out twice.

The session is one stored blob that each request writes back whole; how the page keeps its entry from undoing
another request's blind switch: judging.views.audit.session.

Split by topic: ``page`` (the page and how it is drawn, refusals, the saved line, the queue order), ``queue``
(submit, reveal, the blind switch), ``saved`` (changing a saved verdict), ``mine`` (the "My audits" list of saved
verdicts, each a link to its answered view) and ``session`` (what the session keeps). ``urlpatterns`` gathers their
addresses for judging.urls.
"""

from __future__ import annotations

from django.urls import path, re_path

from judging.views.audit.mine import my_audits
from judging.views.audit.page import audit_page
from judging.views.audit.queue import audit_blind, audit_reveal, audit_submit
from judging.views.audit.saved import audit_answered

# Item ids as [0-9]{1,18} (like the API's): a longer number names no item (404), never a database overflow.
urlpatterns = [
    path("projects/<slug:slug>/audit/", audit_page, name="judging-audit"),
    path("projects/<slug:slug>/audit/blind/", audit_blind, name="judging-audit-blind"),
    path("projects/<slug:slug>/audit/mine/", my_audits, name="judging-my-audits"),
    re_path(
        r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/audit/(?P<item_id>[0-9]{1,18})/submit/$",
        audit_submit,
        name="judging-audit-submit",
    ),
    re_path(
        r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/audit/(?P<item_id>[0-9]{1,18})/reveal/$",
        audit_reveal,
        name="judging-audit-reveal",
    ),
    re_path(
        r"^projects/(?P<slug>[-a-zA-Z0-9_]+)/audit/answered/(?P<audit_id>[0-9]{1,18})/$",
        audit_answered,
        name="judging-audit-answered",
    ),
]
