"""Who may ask what: the callers, and the statuses each URL family answers each of them.

A URL pattern added without a row in EXPECTED (or a reason in NOT_REQUESTED)
fails test_every_url_pattern_has_an_expectation.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

# --------------------------------------------------------------------------- who asks

ANONYMOUS, OUTSIDER, ANNOTATOR, UNASSIGNED, AUDITOR, CURATOR, ADMIN, SUPERUSER = (
    "anonymous", "outsider", "annotator", "annotator-elsewhere", "auditor", "curator", "admin", "superuser",
)
# ANNOTATOR is carol (round 1 of the sample's batch submitted, beside dave); UNASSIGNED is alice, an
# annotator of the same projects with the other batch (and no pair judged yet).
ROLES = (ANONYMOUS, OUTSIDER, ANNOTATOR, UNASSIGNED, AUDITOR, CURATOR, ADMIN, SUPERUSER)
MEMBERS = (ANNOTATOR, UNASSIGNED, AUDITOR, CURATOR, ADMIN, SUPERUSER)
LOGGED_IN = (OUTSIDER, *MEMBERS)
ADMINS = (ADMIN, SUPERUSER)  # a project admin who is not site staff, and the demo's superuser
# Exports, figures and the audit queue: access.get_project_for_exporter, views.figures.get_project_for_results,
# judging.access.get_project_for_auditor.
AUDITORS = (AUDITOR, *ADMINS)
CURATORS = (CURATOR, *ADMINS)  # access.get_project_for_curator
REVIEWERS = (AUDITOR, CURATOR, *ADMINS)  # see every annotator's work: batch browser, pair rounds, metadata
JUDGES = (ANNOTATOR, UNASSIGNED, *ADMINS)  # label pairs (annotate.services.pairs.queue.JUDGE_ROLES)

SPANS, PAIRS = "spans", "pairs"

# What an allowed role gets: a page or a read (200), or a write with an empty body that got past the
# access check (a redirect back, a form re-rendered with its errors, a 400 naming the missing field, a
# 409 about the object's state). 401, 403, 404 and 405 are refusals, never "allowed".
READ = frozenset({200})
WRITE = frozenset({200, 201, 204, 302, 400, 409})


@dataclass(frozen=True)
class Rule:
    """The statuses of one URL family, role by role, from the access rules (annotate/access.py, judging/access.py).

    ``allowed`` roles get ``ok``; an outsider (admin of another project) gets 404 (the project's existence is
    hidden); a member with
    another role gets ``refused`` (403, or 404 where the object itself is hidden from that role); the
    anonymous get a redirect to the login page (pages) or 401 (API). ``kinds``: the project kinds whose
    slug fills <slug> (None: the URL names no project). ``batch_bound``: the URL names the sample, which an
    annotator of another batch may not know of (404).
    """

    allowed: tuple[str, ...]
    method: str = "GET"
    ok: frozenset[int] = READ
    refused: int = 403
    api: bool = False
    kinds: tuple[str, ...] | None = (SPANS,)
    query: str = ""
    body: dict[str, Any] | None = None
    anonymous: int | None = None  # overrides the default (302 for pages, 401 for the API)
    overrides: dict[str, frozenset[int]] = field(default_factory=dict)
    batch_bound: bool = False
    # ``allowed`` under a project of one kind where the URL's object differs by kind (a job's line: the span
    # project's embedding job, a pairs project's job); the kinds not named take ``allowed``.
    allowed_in: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def under(self, kind: str | None) -> Rule:
        """The rule for the URL under a project of ``kind``."""
        return replace(self, allowed=self.allowed_in[kind]) if kind in self.allowed_in else self

    def expected(self, role: str) -> frozenset[int]:
        if role in self.overrides:
            return self.overrides[role]
        if role == UNASSIGNED and self.batch_bound:
            return frozenset({404})
        if role in self.allowed:
            return self.ok
        if role == ANONYMOUS:
            return frozenset({self.anonymous or (401 if self.api else 302)})
        if role == OUTSIDER:
            return frozenset({404})
        return frozenset({self.refused})


def page(allowed: tuple[str, ...], **extra: Any) -> Rule:
    return Rule(allowed, **extra)


def post(allowed: tuple[str, ...], **extra: Any) -> Rule:
    return Rule(allowed, method="POST", ok=WRITE, **extra)


def api(allowed: tuple[str, ...], **extra: Any) -> Rule:
    return Rule(allowed, api=True, **extra)


def api_post(allowed: tuple[str, ...], **extra: Any) -> Rule:
    return Rule(allowed, method="POST", ok=WRITE, api=True, **extra)


BOTH = (SPANS, PAIRS)

# One row per URL name.
EXPECTED: dict[str, Rule] = {
    # --- Django's auth pages: public by nature (logging in, resetting a password) ---------------------------
    "login": page(ROLES, kinds=None),
    "password_reset": page(ROLES, kinds=None),
    "password_reset_done": page(ROLES, kinds=None),
    "password_reset_confirm": page(ROLES, kinds=None),  # an invalid link: the page says so
    "password_reset_complete": page(ROLES, kinds=None),
    "password_change": page(LOGGED_IN, kinds=None),
    "password_change_done": page(LOGGED_IN, kinds=None),
    "logout": post(ROLES, kinds=None),  # POST only (Django 5); requested last, it ends the session
    # --- the API's own description: public documentation, no project data -----------------------------------
    "api-schema": api(LOGGED_IN, kinds=None),  # like every endpoint, for signed-in callers
    "api-docs": page(LOGGED_IN, kinds=None),
    "api-root": api(LOGGED_IN, kinds=None),
    # --- home, project creation, API tokens: no project in the URL ------------------------------------------
    "home": page(LOGGED_IN, kinds=None),
    "project-create": page((), kinds=None, overrides={OUTSIDER: frozenset({403}), SUPERUSER: READ}),
    "api-tokens": page(LOGGED_IN, kinds=None),
    # Someone else's token is hidden (404); the token in the URL is the project admin's own.
    "api-token-revoke": post((ADMIN,), kinds=None, refused=404),
    # --- annotate pages of any project kind ------------------------------------------------------------------
    "project": page(MEMBERS, kinds=BOTH),
    "guidelines": page(MEMBERS, kinds=BOTH),
    # A job's line, for the roles whose project page shows that kind of job (access.get_job_for_user, as the API's
    # job endpoint): the demo's embedding job to admins, a pairs project's job to admins, auditors and curators; a span
    # project's exports to admins and auditors (tests/annotate/test_job_line_roles.py). Annotators: 403.
    "job": page(ADMINS, kinds=BOTH, allowed_in={PAIRS: REVIEWERS}),
    "project-members": page(ADMINS, kinds=BOTH),
    "member-create": post(ADMINS, kinds=BOTH),
    "member-role": post(ADMINS, kinds=BOTH),
    "member-remove": post(ADMINS, kinds=BOTH),
    "member-invitation": post(ADMINS, kinds=BOTH),
    "label-set": page(ADMINS, kinds=BOTH),
    "project-settings": post(ADMINS, kinds=BOTH),
    # --- span projects -----------------------------------------------------------------------------------------
    "project-import": post(ADMINS),
    "project-assign": post(ADMINS),
    # Cancel the demo's embedding job from its line (admins): cancelled or, once done, refused with a message: 302.
    "job-cancel": post(ADMINS),
    "batch-annotators": page(ADMINS),
    "unassign": post(ADMINS),
    "reassign": post(ADMINS),
    "reopen-round": post(ADMINS),
    "open-round-two": post(ADMINS),
    "batch-samples": page(REVIEWERS),
    "flags": page(ADMINS),
    "flag-resolve": post(ADMINS),
    "sample": page(MEMBERS, batch_bound=True),
    "project-export (page)": post(AUDITORS),
    "export-download": page(AUDITORS),
    "curation": page(CURATORS),
    "accept-agreed": post(CURATORS),
    "adjudicate": page(CURATORS),
    "agreement": page(AUDITORS),
    "agreement-exclusion": post(ADMINS),
    "disputes": page(AUDITORS, query="batch={batch}"),
    "results": page(AUDITORS),
    "results-selection": post(ADMINS),
    # --- pairs projects ------------------------------------------------------------------------------------------
    "pairs-label": page(JUDGES, kinds=(PAIRS,)),
    "pairs-import": post(ADMINS, kinds=(PAIRS,)),
    "pairs-perturb": post(ADMINS, kinds=(PAIRS,)),
    "pairs-perturb-job-cancel": post(ADMINS, kinds=(PAIRS,)),  # the world's perturbation job is queued: 302
    "pairs-settings": post(ADMINS, kinds=(PAIRS,)),
    "pairs-export": page(AUDITORS, kinds=(PAIRS,)),
    "pairs-vectors": post(ADMINS, kinds=(PAIRS,)),
    "pairs-round-new": page(ADMINS, kinds=(PAIRS,)),
    "pairs-round-job": page(ADMINS, kinds=(PAIRS,)),
    "pairs-round-job-cancel": post(ADMINS, kinds=(PAIRS,)),  # the demo's round job is queued: cancelled, 302
    "pairs-round": page(REVIEWERS, kinds=(PAIRS,)),
    "pairs-flags": page(ADMINS, kinds=(PAIRS,)),
    "pairs-flag-block": post(ADMINS, kinds=(PAIRS,)),
    "pairs-flag-dismiss": post(ADMINS, kinds=(PAIRS,)),
    "pairs-judge-unblock": post(ADMINS, kinds=(PAIRS,)),
    # --- judging pages (span projects): judges are the admins', the audit queue the auditors' ----------------
    "judging-judges": page(ADMINS),
    "judging-judge-create": post(ADMINS),
    "judging-judge-update": post(ADMINS),
    "judging-settings": post(ADMINS),
    "judging-run-start": post(ADMINS),
    "judging-triage-start": post(ADMINS),
    "judging-prompt": page(ADMINS),
    "judging-run": page(ADMINS),
    # Cancel a run from its line (admins): the world's run holds imported outputs, so refused with a message: 302.
    "judging-run-cancel": post(ADMINS),
    "judging-people": page(ADMINS),
    "judging-audit": page(AUDITORS),
    "judging-audit-blind": post(AUDITORS),
    "judging-audit-submit": post(AUDITORS),
    "judging-audit-reveal": post(AUDITORS),
    # My audits: an auditor's saved verdicts (an admin lists every auditor's).
    "judging-my-audits": page(AUDITORS),
    # Changing a saved verdict: the auditor's own only (the world's audit is the auditor's; an admin 403 too).
    "judging-audit-answered": page((AUDITOR,)),
    "judging-synthetic": page(ADMINS),
    "judging-synthetic-create": post(ADMINS),
    "judging-synthetic-import": post(ADMINS),
    "judging-synthetic-set": page(ADMINS),
    "judging-synthetic-run": post(ADMINS),
    "judging-synthetic-resume": post(ADMINS),
    # Cancel a set from its line (admins): the world's set holds imported rewrites, done, so refused with a message: 302.
    "judging-synthetic-cancel": post(ADMINS),
    # downloads (judging.access.get_project_for_export): judgements the admins', audits an auditor's own too
    "judging-export-judgements": page(ADMINS),
    "judging-export-audits": page(AUDITORS),
    # --- annotate API ----------------------------------------------------------------------------------------------
    "project-list": api(LOGGED_IN, kinds=None),  # an outsider gets an empty list
    "project-detail": api(MEMBERS, kinds=BOTH),
    "project-batches": api(MEMBERS, kinds=BOTH),
    "project-export (api)": api(AUDITORS, query="format=jsonl"),
    "sample-list": api(LOGGED_IN, kinds=None),
    "sample-detail": api(MEMBERS, kinds=None, batch_bound=True),
    "sample-spans": api(MEMBERS, kinds=None, batch_bound=True),
    "sample-similarity": api_post(MEMBERS, kinds=None, batch_bound=True),
    # The caller's own flag: only the batch's annotators flag (others 403).
    "sample-flag": api((ANNOTATOR,), kinds=None, batch_bound=True),
    "sample-gold": api(REVIEWERS, kinds=None, batch_bound=True),
    # Round 2 is not open: nobody sees the others' round-1 work (the annotator 403, as every other role).
    "sample-others": api((), kinds=None, batch_bound=True),
    "sample-review": api_post((ANNOTATOR,), kinds=None, batch_bound=True),
    # The time of a visit: the batch's annotators only (carol's round is submitted: 409, nothing stored).
    "sample-time": api_post((ANNOTATOR,), kinds=None, batch_bound=True),
    # Submitting a re-opened round again: the batch's annotators only (carol's round is not re-opened: 409).
    "batch-submit": api_post((ANNOTATOR,), kinds=None, batch_bound=True),
    "span-list": api(LOGGED_IN, kinds=None),  # each caller gets the spans they may see
    # Another annotator's span: hidden (404) from the annotator; reviewers read every span.
    "span-detail": api(REVIEWERS, kinds=None, refused=404),
    "api-agreement": api(AUDITORS, query="scheme=C%7CU"),
    "api-halu-rates": api(AUDITORS),
    "api-detector-eval": api(AUDITORS),
    # A campaign from a script, with the members page's and the import forms' rule: admins, either kind of project.
    # An empty body gets 400 naming what is missing; removing the spare member (no work) succeeds, rolled back.
    "api-members": api(ADMINS, kinds=BOTH),  # POST in MORE_METHODS
    "api-member": Rule(ADMINS, method="PATCH", ok=WRITE, api=True, kinds=BOTH),  # DELETE in MORE_METHODS
    "api-imports": api_post(ADMINS, kinds=BOTH),
    # The project page's round buttons: admins. An annotator of another batch does not see the batch (404).
    "batch-round-two": api_post(ADMINS, kinds=None, batch_bound=True),  # the demo's batch 2 is ready: opened
    "batch-reopen": api_post(ADMINS, kinds=None, batch_bound=True),  # no annotator or reason: 400
    # The project page's Assign form: admins (POST in MORE_METHODS). An annotator of another batch: 404.
    "api-batch-assignments": api(ADMINS, kinds=None, batch_bound=True),
    # A job, for the roles whose project page shows its kind: the demo's embedding job, admins only (a pairs
    # project's jobs and a span project's exports, with their wider roles: tests/annotate/test_api_jobs.py).
    "api-project-job": api(ADMINS),
    # Cancel an embedding or export job (admins): the demo's embedding job (200, or 409 once done), its done export
    # (409); a pairs project has neither (404).
    "api-embedding-job-cancel": api_post(ADMINS),
    "api-export-job-cancel": api_post(ADMINS),
    # --- pairs API ---------------------------------------------------------------------------------------------------
    "api-pairs": api(MEMBERS, kinds=None, query="project={pairs}"),
    "api-pairs-next": api(JUDGES, kinds=None, query="project={pairs}", ok=frozenset({200, 204})),
    "api-pairs-undo": api_post(JUDGES, kinds=None, query="project={pairs}"),
    "api-pair-judgements": api_post(JUDGES, kinds=None, body={"label": "H"}),
    "api-pair-rounds": api(MEMBERS, kinds=(PAIRS,)),
    "api-pair-round": api(MEMBERS, kinds=(PAIRS,)),  # the round list's entry; reviewers also get its figures
    "api-pair-agreement": api(REVIEWERS, kinds=(PAIRS,)),  # as the project page and the round page show it
    "api-pair-round-job-cancel": api_post(ADMINS, kinds=(PAIRS,)),
    "api-perturbation-job-cancel": api_post(ADMINS, kinds=(PAIRS,)),
    "api-judge-flags": api(ADMINS, kinds=(PAIRS,)),
    "api-judge-flag-block": api_post(ADMINS, kinds=(PAIRS,)),
    "api-judge-flag-unblock": api_post(ADMINS, kinds=(PAIRS,)),
    "api-judge-flag-dismiss": api_post(ADMINS, kinds=(PAIRS,)),
    # --- judging API ---------------------------------------------------------------------------------------------------
    "judging-api-judges": api(ADMINS),
    "judging-api-runs": api(ADMINS),
    "judging-api-import": api_post(ADMINS),
    "judging-api-run": api(ADMINS, kinds=None),
    "judging-api-run-judgements": api(ADMINS, kinds=None),
    "judging-api-run-cancel": api_post(ADMINS),  # the world's run holds imported outputs: 409
    "judging-api-export-judgements": api(ADMINS),
    "judging-api-export-audits": api(AUDITORS),
    "judging-api-judge-people": api(ADMINS),  # as the judge-vs-people page
    "judging-api-synthetic-tables": api(ADMINS),  # as the synthetic set page
    "judging-api-synthetic-sets": api(ADMINS),  # as the synthetic sets on the judges page
    "judging-api-synthetic-cancel": api_post(ADMINS),  # the world's set is imported, done: 409
    "api-audit-next": api(AUDITORS, ok=frozenset({200, 204})),
    "api-audit-verdict": api_post(AUDITORS, kinds=None),
    "api-audit-change": Rule((AUDITOR,), method="PUT", ok=WRITE, api=True, kinds=None),  # own verdicts only
}

# The other methods of a URL that answers several: EXPECTED's row is one, these the rest (by the same key). An
# API view's method without a row here or there fails test_every_api_method_has_an_expectation.
MORE_METHODS: dict[str, tuple[Rule, ...]] = {
    # A valid flag: with an empty body a reviewer is told 400 (the body is read before the role), not 403.
    "sample-flag": (
        api_post((ANNOTATOR,), kinds=None, batch_bound=True, body={"kind": "skip"}),
        Rule((ANNOTATOR,), method="DELETE", ok=WRITE, api=True, kinds=None, batch_bound=True),
    ),
    "sample-gold": (Rule(CURATORS, method="PUT", ok=WRITE, api=True, kinds=None, batch_bound=True),),
    "span-list": (api_post(LOGGED_IN, kinds=None),),
    # dave's span: only dave changes it (hidden from the annotators, 404, as when reading it); PUT is not offered.
    "span-detail": (
        Rule((), method="PUT", api=True, kinds=None, overrides={role: frozenset({405}) for role in LOGGED_IN}),
        Rule((), method="PATCH", api=True, kinds=None, overrides=dict.fromkeys((ANNOTATOR, UNASSIGNED), frozenset({404}))),
        Rule((), method="DELETE", api=True, kinds=None, overrides=dict.fromkeys((ANNOTATOR, UNASSIGNED), frozenset({404}))),
    ),
    # Creating a judge, starting a run: an admin's empty body gets 400 naming the fields it needs.
    "judging-api-judges": (api_post(ADMINS),),
    "judging-api-runs": (api_post(ADMINS),),
    # Adding a member (an empty body: 400 naming username and role); removing the spare member (no work): 200.
    "api-members": (api_post(ADMINS, kinds=BOTH),),
    "api-member": (Rule(ADMINS, method="DELETE", ok=WRITE, api=True, kinds=BOTH),),
    # Assigning with an empty body: 400 naming annotators.
    "api-batch-assignments": (api_post(ADMINS, kinds=None, batch_bound=True),),
    # Reading and changing part of a saved verdict: its own auditor only, as PUT (an empty PATCH changes nothing).
    "api-audit-change": (
        api((AUDITOR,), kinds=None),
        Rule((AUDITOR,), method="PATCH", ok=WRITE, api=True, kinds=None),
    ),
}

# URL names given to a page and an API endpoint alike: their rows say which.
SHARED_NAMES = {"project-export"}


def row_key(route: str, name: str) -> str:
    if name in SHARED_NAMES:
        return f"{name} ({'api' if route.startswith('api/') else 'page'})"
    return name


# Patterns this test does not request, each with the reason. Anything else without a row fails the test.
NOT_REQUESTED = {
    # Django's admin site: its own staff check guards every view (admin_view); the index is asked
    # by test_roles_matrix.test_django_admin_is_for_site_staff_only, its ~120 model pages are not.
    "admin/": "Django admin",
    # Any other /api/.../ address: 401 to anonymous callers, as every endpoint, and a JSON 404 to the signed-in
    # (tests/annotate/test_api_not_found.py, tests/annotate/test_api_anonymous_and_unknown_fields.py).
    "^api/": "the API's catch-all 404",
}


OTHER_KIND = {SPANS: PAIRS, PAIRS: SPANS}


# A URL of one project kind under the slug of a project of the other kind (every role below is a member of
# both demo projects). The pairs and judging lookups ask for the kind first: 404 for everyone, except the
# judging API's slug endpoints and the pairs API's (TOLD_THE_KIND), which tell every member the project's
# kind. The span pages below read the project in the URL whatever its kind: their role rule holds, and an
# allowed role gets the status listed (404 where the URL names an object of the other project). None shows
# anything of another project: their queries are the project's own.
KIND_AGNOSTIC: dict[str, frozenset[int]] = {
    "sample": frozenset({302}),  # the sample page moves to the sample's own project's URL
    "batch-annotators": frozenset({404}),
    "batch-samples": frozenset({404}),
    "unassign": frozenset({404}),
    "reassign": frozenset({404}),
    "reopen-round": frozenset({404}),
    "open-round-two": frozenset({404}),
    "flag-resolve": frozenset({404}),
    "adjudicate": frozenset({404}),
    "export-download": frozenset({404}),
    "judging-run": frozenset({404}),  # the run's own project decides the role (get_run_for_admin)
    "flags": READ,
    "curation": READ,
    "agreement": READ,
    "results": READ,
    "project-export (api)": frozenset({400}),  # format=jsonl: not a pairs format (pairs and hades are)
    # 400 "the project has no round 1": a pairs project has no span rounds
    "disputes": frozenset({400}),
    # 400 on project: a pairs project, whose figures are at the pairs endpoints
    "api-agreement": frozenset({400}),
    "api-halu-rates": frozenset({400}),
    "api-detector-eval": frozenset({400}),
    # writes that report the empty outcome on the project page (or 400 for a missing field)
    "project-import": WRITE,
    "project-assign": WRITE,
    "project-export (page)": WRITE,
    "accept-agreed": WRITE,
    "agreement-exclusion": WRITE,
    "results-selection": WRITE,
}


# The judging API on a pairs project, and the pairs API on a span project: 400 on project, naming its kind, to
# every member whatever their role (judging.api.lookups, annotate.api.pairs.lookups.pairs_project_for);
# outsiders 404 and anonymous callers 401 as everywhere.
TOLD_THE_KIND = frozenset({
    "judging-api-judge-people", "judging-api-synthetic-tables", "judging-api-synthetic-sets",
    "judging-api-judges", "judging-api-runs", "judging-api-import", "judging-api-export-judgements",
    "judging-api-export-audits", "api-audit-next", "api-pair-rounds", "api-pair-round", "api-pair-agreement",
    "api-judge-flags", "api-judge-flag-block", "api-judge-flag-unblock", "api-judge-flag-dismiss",
    "api-pair-round-job-cancel", "api-perturbation-job-cancel", "judging-api-run-cancel",
    "judging-api-synthetic-cancel",
})


def wrong_kind(rule: Rule, key: str) -> Rule:
    if key in TOLD_THE_KIND:
        return replace(rule, allowed=MEMBERS, ok=frozenset({400}), overrides={})
    if key not in KIND_AGNOSTIC:
        return replace(rule, allowed=(), refused=404, overrides={})
    return replace(rule, ok=KIND_AGNOSTIC[key])
