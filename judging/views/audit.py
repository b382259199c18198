"""The audit page: one flagged output at a time, keyboard first, for the project's auditors and admins.

The page and its htmx endpoints answer with the whole page, or with its ``audit_view`` partial for htmx (200
when done; 400 or 409 with the message, nothing changed). Serving and answering go through
judging.services.audits, the same rules the API follows.

Blind mode (a per-project choice kept in the session, default from the project's ``blind_by_default``): the
judges' answers are not in the page until the auditor gives a score. That score goes to the ``reveal``
endpoint, which keeps it in the session (an Audit's score means "answered", so it is not written there) and
answers with the judges revealed; the final verdict keeps that score as ``blind_score``, and is ``blind`` when its
score is the one given blind.

Changing a saved verdict (``u``): the page keeps, per browser tab, the audits saved on it, and ``u`` asks for the
latest one's ``answered`` view (GET), the item with its saved verdict and its judges shown, whose form changes it
(POST) and answers with the auditor's current item. Only one's own answered audit: another auditor's is 403.

The item clock meanwhile: the minutes spent changing an old verdict belong to no item. Showing an answered audit
stops the clock of the item the auditor holds (a pause kept in the session: a reload of the change page, u to the
verdict before, or a second tab keeps the first pause); the next time the page shows the current item (Esc, the
change saved, a reload, another tab) the clock goes on with ``served_at`` moved forward by the time it stood, so
the clock on the page and the seconds the verdict records agree and leave that time out. A change abandoned (the
tab closed) is resumed when the auditor next opens the page, the time away left out as well. An item answered
from a tab that kept showing it meanwhile keeps its whole time: that tab's clock ran on. A pause resumes once,
and never moves ``served_at`` past now (judging.services.audits.queue), so no time is negative or left out twice.

The session is one stored blob, and a request writes back all of it: a page load that read it before the blind
switch saved would, by writing, undo the switch (``b`` then a reload, both in flight). So a render that changes
nothing writes nothing, a write keeps a choice saved since the request read the session, and the switch is
saved at once rather than when its answer is ready.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import render
from django.urls import path, re_path, reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotate.access import Forbidden
from annotate.models import Project
from annotate.views.members import HtmxHttpRequest
from judging.access import get_project_for_auditor
from judging.models import Audit
from judging.models.judges import SCORE_LABELS
from judging.services import audits
from judging.services.audits import AuditError

REMEMBERED_ITEMS = 50  # items whose reveal the session remembers, per project


@dataclass
class AuditSession:
    """What the session keeps for an auditor in one project."""

    default_blind: bool  # the project's blind_by_default
    choice: bool | None = None  # the auditor's own switch, once they used it
    pending: dict[str, int] = field(default_factory=dict)  # item id -> the score given before the reveal
    revealed: list[int] = field(default_factory=list)  # items whose judges' answers were shown to the auditor
    pause: audits.ClockPause | None = None  # the held item's clock, stopped while a saved verdict is being changed
    stored: dict[str, Any] | None = None  # the entry as this request read it
    chose: bool = False  # this request set ``choice`` (the switch): it wins over a choice saved meanwhile

    @property
    def blind(self) -> bool:
        return self.default_blind if self.choice is None else self.choice

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
        return cls(
            default_blind=default,
            choice=choice if isinstance(choice, bool) else None,
            pending={str(k): int(v) for k, v in (stored.get("pending") or {}).items()},
            revealed=[int(pk) for pk in stored.get("revealed") or []],
            pause=audits.ClockPause.from_json(stored.get("pause")),
            stored=stored,
        )

    def choose(self, blind: bool) -> None:
        """The auditor's own switch."""
        self.choice = blind
        self.chose = True

    def save(self, request: Any, project: Project) -> None:
        """Keep the entry in the session, unless nothing changed (see the module docstring for why)."""
        self.revealed = self.revealed[-REMEMBERED_ITEMS:]
        self.pending = dict(list(self.pending.items())[-REMEMBERED_ITEMS:])
        entry: dict[str, Any] = {"blind": self.choice, "pending": self.pending, "revealed": self.revealed}
        if self.pause is not None:
            entry["pause"] = self.pause.as_json()
        if entry == self.stored:
            return
        if not self.chose:
            entry["blind"] = self._choice_saved_since(request, project)
        request.session[self.key(project)] = entry
        self.stored = entry

    def _choice_saved_since(self, request: Any, project: Project) -> bool | None:
        """The choice as the session store holds it now: another request's switch, saved since this one read the
        session, or else this request's own."""
        read = (self.stored or {}).get("blind")
        session = request.session
        if session.session_key is None:
            return self.choice
        now = session.__class__(session_key=session.session_key).get(self.key(project))
        if isinstance(now, dict) and now.get("blind") != read and isinstance(now.get("blind"), bool | None):
            return now.get("blind")
        return self.choice

    def hides(self, audit: Audit) -> bool:
        """Blind mode, and the auditor has neither scored this item nor seen its judges yet."""
        return self.blind and audit.item_id not in self.revealed and str(audit.item_id) not in self.pending

    def forget(self, item_id: int) -> None:
        self.pending.pop(str(item_id), None)
        if item_id in self.revealed:
            self.revealed.remove(item_id)


@dataclass
class VerdictForm:
    """The verdict form as posted; echoed back when the verdict is refused."""

    score: int | None = None
    agreed: bool = False
    reasoning_wrong: bool = False
    note: str = ""
    error: str = ""

    @classmethod
    def of(cls, audit: Audit) -> VerdictForm:
        """The saved verdict, to change it."""
        return cls(score=audit.score, agreed=audit.agreed, reasoning_wrong=audit.reasoning_wrong, note=audit.note)

    @classmethod
    def read(cls, data: QueryDict) -> VerdictForm:
        form = cls(
            agreed=data.get("agreed", "") in ("1", "on", "true"),
            reasoning_wrong=data.get("reasoning_wrong", "") in ("1", "on", "true"),
            note=data.get("note", ""),
        )
        raw = data.get("score", "").strip()
        if raw:
            if raw in ("1", "2", "3", "4", "5"):
                form.score = int(raw)
            else:
                form.error = f"score must be a whole number from 1 to 5, not {raw!r}"
        return form


LEVELS = [{"value": level, "label": SCORE_LABELS[level]} for level in sorted(SCORE_LABELS)]


def _agree_with(audit: Audit) -> tuple[int | None, str]:
    """The score agreeing takes, and why agreeing is not possible when it is not."""
    shown = audit.judgement
    if shown is None:
        return None, "No judge's answer to agree with: give your own score."
    if shown.score is not None:
        return shown.score, ""
    if shown.probability is not None:
        return None, "The shown judge gives an NLI probability, not a 1-5 score: give your own score."
    return None, f"The shown judge's answer has no score ({shown.get_status_display().lower()}): give your own."


def _audit_view(
    request: HtmxHttpRequest,
    project: Project,
    role: str,
    *,
    status: int = 200,
    notice: str = "",
    error: str = "",
    form: VerdictForm | None = None,
    form_item: int | None = None,
    last: Audit | None = None,
    last_changed: bool = False,
    changing: Audit | None = None,
) -> HttpResponse:
    """The page (or its partial for htmx) with the auditor's current item, serving one if they hold none; or, with
    ``changing``, that answered audit of theirs with its saved verdict (or ``form``, refused) to change."""
    if changing is not None:
        return _change_view(request, project, role, changing, status=status, error=error, form=form)
    session = AuditSession.load(request, project)
    if session.pause is not None:
        # Back to the current item from changing a saved verdict: its clock goes on from where it stopped.
        audits.resume_item_clock(project, request.user, session.pause)
        session.pause = None
        session.save(request, project)
    audit = audits.serve_next_audit(project, request.user)
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "audit": audit,
        "blind": session.blind,
        "progress": audits.audit_progress(project, request.user),
        "notice": notice,
        "error": error,
        "last": last,
        "last_changed": last_changed,
        "last_change_url": _change_url(project, last) if last is not None else "",
        "levels": LEVELS,
        "page_url": reverse("judging-audit", args=[project.slug]),
        "blind_url": reverse("judging-audit-blind", args=[project.slug]),
    }
    if audit is not None:
        hidden = session.hides(audit)
        if not hidden and audit.item_id not in session.revealed:
            session.revealed.append(audit.item_id)
        session.save(request, project)
        blind_score = session.pending.get(str(audit.item_id))
        echo = form if form is not None and form_item == audit.item_id else VerdictForm(score=blind_score)
        # Blind: not even the number agreeing would take goes into the page before the auditor's own score.
        agree_score, agree_refusal = (None, "Give your own score first.") if hidden else _agree_with(audit)
        context.update(
            view=audits.item_view(audit.item, reveal=not hidden),
            hidden=hidden,
            blind_score=blind_score,
            form=echo,
            agree_score=agree_score,
            agree_refusal=agree_refusal,
            elapsed=max(0.0, (audits.clock.now() - audit.served_at).total_seconds()),
            submit_url=reverse("judging-audit-submit", args=[project.slug, audit.item_id]),
            reveal_url=reverse("judging-audit-reveal", args=[project.slug, audit.item_id]),
        )
    template = "judging/audit.html#audit_view" if request.htmx else "judging/audit.html"
    return render(request, template, context, status=status)


def _change_url(project: Project, audit: Audit) -> str:
    return reverse("judging-audit-answered", args=[project.slug, audit.pk])


def _change_view(
    request: HtmxHttpRequest, project: Project, role: str, audit: Audit, *, status: int, error: str,
    form: VerdictForm | None,
) -> HttpResponse:
    """An answered audit of the auditor's, its judges shown (they saw them before saving), its saved verdict in the
    form: nothing is served, the session's blind state is left as it is (the item is answered), and the clock of the
    item the auditor holds stands still until they come back to it (see the module docstring)."""
    session = AuditSession.load(request, project)
    session.pause = audits.pause_item_clock(project, request.user, session.pause)
    session.save(request, project)
    agree_score, agree_refusal = _agree_with(audit)
    context: dict[str, Any] = {
        "project": project,
        "role": role,
        "audit": audit,
        "changing": True,
        "blind": session.blind,
        "progress": audits.audit_progress(project, request.user),
        "error": error,
        "levels": LEVELS,
        "page_url": reverse("judging-audit", args=[project.slug]),
        "blind_url": reverse("judging-audit-blind", args=[project.slug]),
        "view": audits.item_view(audit.item, reveal=True),
        "hidden": False,
        "blind_score": audit.blind_score,
        "form": form if form is not None else VerdictForm.of(audit),
        "agree_score": agree_score,
        "agree_refusal": agree_refusal,
        "submit_url": _change_url(project, audit),
    }
    template = "judging/audit.html#audit_view" if request.htmx else "judging/audit.html"
    return render(request, template, context, status=status)


def _refused(request: HtmxHttpRequest, project: Project, role: str, failure: AuditError, **extra: Any) -> HttpResponse:
    if failure.status == 404:
        raise Http404(failure.message)
    if failure.status == 403:
        raise Forbidden(failure.message)
    return _audit_view(request, project, role, status=failure.status, error=f"Not saved: {failure.message}.", **extra)


@never_cache
@require_GET
@login_required
def audit_page(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    project, role = get_project_for_auditor(request.user, slug)
    return _audit_view(request, project, role)


@never_cache
@require_POST
@login_required
def audit_submit(request: HtmxHttpRequest, slug: str, item_id: str) -> HttpResponse:
    """The verdict on the item served to the auditor; answers with the next item."""
    project, role = get_project_for_auditor(request.user, slug)
    item = int(item_id)
    session = AuditSession.load(request, project)
    form = VerdictForm.read(request.POST)
    try:
        if form.error:
            raise AuditError(form.error, status=400, field="score")
        audit = audits.submit_audit(
            project, request.user, item,
            score=form.score, agreed=form.agreed, reasoning_wrong=form.reasoning_wrong, note=form.note,
            blind_score=session.pending.get(str(item)),
        )
    except AuditError as failure:
        return _refused(request, project, role, failure, form=form, form_item=item)
    session.forget(item)
    session.save(request, project)
    if not request.htmx:
        messages.success(request, _saved_text(audit))
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return _audit_view(request, project, role, last=audit)


def _saved_text(audit: Audit, *, changed: bool = False) -> str:
    agreed = " (agreed with the judge)" if audit.agreed else ""
    # Audit.blind: the final score is the one given before the judges' answers were shown; blind_score that one.
    blind = ", given blind" if audit.blind else f", {audit.blind_score} given blind" if audit.blind_score else ""
    # seconds is None when the server clock went back between serve and answer (annotate.services.clock).
    first = "time" if audit.seconds is None else f"{audit.seconds:.1f} s"
    if changed:
        return f"Changed: score {audit.score}{agreed}{blind} (the first answer's {first} kept)."
    timed = "time on the item not known" if audit.seconds is None else f"{first} on the item (server time)"
    return f"Saved: score {audit.score}{agreed}{blind}, {timed}."


@never_cache
@require_http_methods(["GET", "POST"])
@login_required
def audit_answered(request: HtmxHttpRequest, slug: str, audit_id: str) -> HttpResponse:
    """One of the auditor's own answered audits (``u``): GET shows it with its saved verdict, POST changes that
    verdict and answers with the current item. Who may, before what was sent: another auditor's audit is 403."""
    project, role = get_project_for_auditor(request.user, slug)
    try:
        audit = audits.own_answered_audit(project, request.user, int(audit_id))
    except AuditError as failure:
        return _refused(request, project, role, failure)
    if request.method == "GET":
        return _audit_view(request, project, role, changing=audit)
    form = VerdictForm.read(request.POST)
    try:
        if form.error:
            raise AuditError(form.error, status=400, field="score")
        changed = audits.change_audit(
            project, request.user, audit.pk,
            score=form.score, agreed=form.agreed, reasoning_wrong=form.reasoning_wrong, note=form.note,
        )
    except AuditError as failure:
        return _refused(request, project, role, failure, form=form, changing=audit)
    if not request.htmx:
        messages.success(request, _saved_text(changed, changed=True))
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return _audit_view(request, project, role, last=changed, last_changed=True)


@never_cache
@require_POST
@login_required
def audit_reveal(request: HtmxHttpRequest, slug: str, item_id: str) -> HttpResponse:
    """Blind mode: the auditor's own score, before the judges' answers; answers with them revealed."""
    project, role = get_project_for_auditor(request.user, slug)
    item = int(item_id)
    form = VerdictForm.read(request.POST)
    if form.error or form.score is None:
        failure = AuditError(form.error or "give your score (1-5) to see the judges' answers", status=400)
        return _refused(request, project, role, failure, form=form, form_item=item)
    held = audits.serve_next_audit(project, request.user)
    if held is None or held.item_id != item:
        failure = AuditError("this item is not the one served to you; here is your current item", code="not_served")
        return _refused(request, project, role, failure)
    session = AuditSession.load(request, project)
    session.pending[str(item)] = form.score
    if item not in session.revealed:
        session.revealed.append(item)
    session.save(request, project)
    if not request.htmx:
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return _audit_view(request, project, role, form=form, form_item=item)


@never_cache
@require_POST
@login_required
def audit_blind(request: HtmxHttpRequest, slug: str) -> HttpResponse:
    """Switch blind mode on or off for this auditor in this project (kept in the session)."""
    project, role = get_project_for_auditor(request.user, slug)
    session = AuditSession.load(request, project)
    session.choose(request.POST.get("blind", "") in ("1", "on", "true"))
    session.save(request, project)
    # Stored now, not once the answer below is ready: a reload sent meanwhile reads the new choice.
    request.session.save()
    held = audits.serve_next_audit(project, request.user)
    notice = ""
    if session.blind and held is not None and not session.hides(held):
        notice = "Blind mode is on: the judges' answers stay hidden from your next item on (this one's are shown already)."
    if not request.htmx:
        if notice:
            messages.info(request, notice)
        return HttpResponseRedirect(reverse("judging-audit", args=[project.slug]))
    return _audit_view(request, project, role, notice=notice)


# Item ids as [0-9]{1,18} (like the API's): a longer number names no item (404), never a database overflow.
urlpatterns = [
    path("projects/<slug:slug>/audit/", audit_page, name="judging-audit"),
    path("projects/<slug:slug>/audit/blind/", audit_blind, name="judging-audit-blind"),
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
