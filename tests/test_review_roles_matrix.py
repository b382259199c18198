"""Every URL of the project, asked by every role: who gets in, who is refused, and what annotators never see.

The demo data (manage.py load_demo) fills the path parameters; four more accounts
give the roles the demo lacks. Each URL is asked by eight callers (anonymous, an
outsider, two annotators, an auditor, a curator, a project admin, the superuser),
under a project of its own kind and of the other kind, pages also as htmx asks
for them; every request is rolled back, so each meets the same data. A URL
pattern added without a row in EXPECTED (or a reason in NOT_REQUESTED) fails
test_every_url_pattern_has_an_expectation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from io import StringIO
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from annotate.models import (
    Assignment,
    Batch,
    Job,
    JudgeFlag,
    Membership,
    PairItem,
    PairRound,
    Project,
    Sample,
    SpanAnnotation,
)
from annotate.pairmath import spam
from annotate.services import flags as sample_flags
from annotate.services import rounds
from annotate.services.pairs import flags as pair_flags
from annotate.services.projects import create_project
from annotate.services.tokens import create_api_token
from judging.models import AuditItem, Judge, Judgement, JudgeRun, SyntheticSet
from judging.services.judges import create_judge

Role = Membership.Role

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
    "job": page(MEMBERS, kinds=BOTH),
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
    "pairs-settings": post(ADMINS, kinds=(PAIRS,)),
    "pairs-export": page(AUDITORS, kinds=(PAIRS,)),
    "pairs-vectors": post(ADMINS, kinds=(PAIRS,)),
    "pairs-round-new": page(ADMINS, kinds=(PAIRS,)),
    "pairs-round-job": page(ADMINS, kinds=(PAIRS,)),
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
    "judging-people": page(ADMINS),
    "judging-audit": page(AUDITORS),
    "judging-audit-blind": post(AUDITORS),
    "judging-audit-submit": post(AUDITORS),
    "judging-audit-reveal": post(AUDITORS),
    "judging-synthetic": page(ADMINS),
    "judging-synthetic-create": post(ADMINS),
    "judging-synthetic-import": post(ADMINS),
    "judging-synthetic-set": page(ADMINS),
    "judging-synthetic-run": post(ADMINS),
    "judging-synthetic-resume": post(ADMINS),
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
    "span-list": api(LOGGED_IN, kinds=None),  # each caller gets the spans they may see
    # Another annotator's span: hidden (404) from the annotator; reviewers read every span.
    "span-detail": api(REVIEWERS, kinds=None, refused=404),
    "api-agreement": api(AUDITORS, query="scheme=C%7CU"),
    "api-halu-rates": api(AUDITORS),
    "api-detector-eval": api(AUDITORS),
    # --- pairs API ---------------------------------------------------------------------------------------------------
    "api-pairs": api(MEMBERS, kinds=None, query="project={pairs}"),
    "api-pairs-next": api(JUDGES, kinds=None, query="project={pairs}", ok=frozenset({200, 204})),
    "api-pairs-undo": api_post(JUDGES, kinds=None, query="project={pairs}"),
    "api-pair-judgements": api_post(JUDGES, kinds=None, body={"label": "H"}),
    "api-pair-rounds": api(MEMBERS, kinds=(PAIRS,)),
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
    "api-audit-next": api(AUDITORS, ok=frozenset({200, 204})),
    "api-audit-verdict": api_post(AUDITORS, kinds=None),
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
    # below (test_django_admin_is_for_site_staff_only), its ~120 model pages are not.
    "admin/": "Django admin",
}


# --------------------------------------------------------------------------- the URL patterns


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def project_patterns() -> list[tuple[str, URLPattern]]:
    return list(_walk(get_resolver().url_patterns))


# --------------------------------------------------------------------------- the world


@dataclass
class World:
    users: dict[str, Any]
    projects: dict[str, Project]
    sample: Sample  # in demo-batch-2: both the annotator (carol) and dave left round-1 spans on it
    values: dict[str, dict[str, Any]]  # per project kind (and None): a value for each path parameter

    def client(self, role: str) -> Client:
        client = Client(raise_request_exception=False)  # a 500 is an answer to report, with the others
        if role != ANONYMOUS:
            client.force_login(self.users[role])
        return client


def load_world(tmp_path: Any) -> World:
    call_command("load_demo", stdout=StringIO())
    User = get_user_model()
    spans_project = Project.objects.get(slug="demo")
    pairs_project = Project.objects.get(slug="demo-pairs")
    users = {
        OUTSIDER: User.objects.create_user("m-outsider"),
        ANNOTATOR: User.objects.get(username="carol"),
        UNASSIGNED: User.objects.get(username="alice"),
        AUDITOR: User.objects.create_user("m-auditor"),
        CURATOR: User.objects.create_user("m-curator"),
        ADMIN: User.objects.create_user("m-admin"),
        SUPERUSER: User.objects.get(username="admin"),
    }
    # The outsider is no stranger to the app: the admin of a project of their own, in no demo project.
    create_project("Elsewhere", slug="matrix-elsewhere", owner=users[OUTSIDER])
    spare = User.objects.create_user("m-spare")  # the member the members pages change
    for project in (spans_project, pairs_project):
        for role, user in ((AUDITOR, users[AUDITOR]), (CURATOR, users[CURATOR]), (ADMIN, users[ADMIN])):
            Membership.objects.create(project=project, user=user, role=role)
        Membership.objects.create(project=project, user=spare, role=Role.ANNOTATOR)
    dave = User.objects.get(username="dave")
    sample = (
        Sample.objects.filter(project=spans_project, spans__annotator=dave, spans__round=1)
        .filter(spans__annotator=users[ANNOTATOR]).distinct().order_by("pk").first()
    )
    assert sample is not None, "the demo no longer has a sample both carol and dave annotated"
    flag, _ = sample_flags.flag_sample(sample, users[ANNOTATOR], round=1, kind="broken", comment="garbled")
    rounds.adjudicate_sample(sample, users[SUPERUSER], span_ids=[], round=1)
    dave_span = SpanAnnotation.objects.filter(sample=sample, annotator=dave, round=1).order_by("pk").first()
    judge = create_judge(spans_project, name="matrix-rubric", kind=Judge.Kind.RUBRIC,
                         base_url="http://127.0.0.1:9/v1", model="matrix-model")
    token, _ = create_api_token(users[ADMIN], "matrix")
    alice_assignment = Assignment.objects.get(batch__project=spans_project, annotator__username="alice", round=1)
    export_job = _finished_export(spans_project, users[SUPERUSER], tmp_path)
    round_job = Job.objects.create(project=pairs_project, kind=Job.Kind.PAIR_ROUND, options={})
    pair_item = PairItem.objects.filter(project=pairs_project, round__number=1).order_by("pk").first()
    frank_flag = JudgeFlag.objects.filter(project=pairs_project).order_by("pk").first()
    erin = User.objects.get(username="erin")
    pair_flags.block_judge(pairs_project, erin, users[SUPERUSER], "for the unblock URL")
    common = {
        "uidb64": "MQ", "token": "set-password-token",
        "pk": sample.pk,  # the router's sample URLs
        "id": pair_item.pk,  # api/pairs/<id>/judgements/
    }
    values = {
        SPANS: {
            **common,
            "slug": spans_project.slug,
            "batch": Batch.objects.get(project=spans_project, name="demo-batch-2").pk,
            "membership": Membership.objects.get(project=spans_project, user=spare).pk,
            "assignment": alice_assignment.pk,
            "flag": flag.pk,
            "sample": sample.pk,
            "job": Job.objects.filter(project=spans_project, kind=Job.Kind.EMBED).first().pk,
            "export": export_job.pk,
            "judge": judge.pk,
            "run": JudgeRun.objects.filter(project=spans_project).order_by("pk").first().pk,
            "audit_item": AuditItem.objects.filter(project=spans_project).order_by("pk").first().pk,
            "synthetic": SyntheticSet.objects.get(project=spans_project).pk,
            "judge_kind": Judge.Kind.RUBRIC,
            "prompt_kind": "rubric",
            "span": dave_span.pk,
        },
        PAIRS: {
            **common,
            "slug": pairs_project.slug,
            "membership": Membership.objects.get(project=pairs_project, user=spare).pk,
            "job": Job.objects.filter(project=pairs_project).exclude(pk=round_job.pk).first().pk,
            "round_job": round_job.pk,
            "round": PairRound.objects.get(project=pairs_project, number=1).number,
            "fmt": "pairs",
            "judge_flag": frank_flag.pk,
            "blocked_judge": erin.pk,
        },
    }
    values[None] = {
        **values[SPANS],
        "token_pk": token.pk,
        "pairs": pairs_project.slug,
    }
    return World(users, {SPANS: spans_project, PAIRS: pairs_project}, sample, values)


def _finished_export(project: Project, user: Any, tmp_path: Any) -> Job:
    """A done export job with its file where export_download looks (settings.DATA_DIR points at tmp_path)."""
    job = Job.objects.create(project=project, kind=Job.Kind.EXPORT, status=Job.Status.DONE, created_by=user)
    folder = tmp_path / "exports" / str(job.pk)
    folder.mkdir(parents=True)
    (folder / "demo-round1.jsonl").write_text('{"sample_id": "1"}\n', encoding="utf-8")
    job.result_path = str(folder / "demo-round1.jsonl")
    job.save(update_fields=["result_path"])
    return job


# Which demo object fills each path parameter, by URL name (the parameter's name alone is ambiguous: pk
# is a membership, a batch, a judge ...).
PARAMETERS: dict[str, dict[str, str]] = {
    "member-role": {"pk": "membership"},
    "member-remove": {"pk": "membership"},
    "member-invitation": {"pk": "membership"},
    "batch-annotators": {"pk": "batch"},
    "unassign": {"pk": "assignment"},
    "reassign": {"pk": "assignment"},
    "reopen-round": {"pk": "assignment"},
    "open-round-two": {"pk": "batch"},
    "batch-samples": {"pk": "batch"},
    "flag-resolve": {"pk": "flag"},
    "sample": {"pk": "sample"},
    "job": {"pk": "job"},
    "export-download": {"pk": "export"},
    "adjudicate": {"pk": "sample"},
    "api-token-revoke": {"pk": "token_pk"},
    "pairs-round-job": {"pk": "round_job"},
    "pairs-round": {"number": "round"},
    "pairs-flag-block": {"pk": "judge_flag"},
    "pairs-flag-dismiss": {"pk": "judge_flag"},
    "pairs-judge-unblock": {"pk": "blocked_judge"},
    "judging-judge-create": {"kind": "judge_kind"},
    "judging-judge-update": {"pk": "judge"},
    "judging-prompt": {"kind": "prompt_kind"},
    "judging-run": {"pk": "run"},
    "judging-people": {"pk": "judge"},
    "judging-audit-submit": {"item_id": "audit_item"},
    "judging-audit-reveal": {"item_id": "audit_item"},
    "judging-synthetic-set": {"pk": "synthetic"},
    "judging-synthetic-run": {"pk": "synthetic"},
    "judging-synthetic-resume": {"pk": "synthetic"},
    "span-detail": {"pk": "span"},
    "judging-api-run": {"id": "run"},
    "judging-api-run-judgements": {"id": "run"},
    "api-audit-verdict": {"id": "audit_item"},
    "api-judge-flag-block": {"id": "judge_flag"},
    "api-judge-flag-unblock": {"id": "judge_flag"},
    "api-judge-flag-dismiss": {"id": "judge_flag"},
}


@dataclass(frozen=True)
class Request:
    name: str
    kind: str | None  # the kind of the project whose slug is in the URL
    url: str
    rule: Rule

    def describe(self) -> str:
        return f"{self.rule.method} {self.url} ({self.name}{', ' + self.kind if self.kind else ''})"


def _fill(route: str, values: dict[str, Any], name: str) -> str:
    """The path of ``route`` with its parameters filled, built from the pattern's own regex groups."""
    chosen = PARAMETERS.get(name, {})
    # Routes from path() keep <converter:name>; re_path() routes are regexes: fill both the same way.
    groups = re.findall(r"<(?:\w+:)?(\w+)>|\(\?P<(\w+)>", route)
    groups = [path_name or regex_name for path_name, regex_name in groups]
    path = route
    for group in groups:
        value = values[chosen.get(group, group)]
        path = re.sub(rf"<(?:\w+:)?{group}>|\(\?P<{group}>[^)]*\)", str(value), path)
    path = path.replace("^", "").replace("$", "").replace("\\.", ".").replace("/?", "/")
    return "/" + path


def _url(route: str, rule: Rule, values: dict[str, Any], name: str) -> str:
    query = rule.query.format(**values)
    return _fill(route, values, name) + (f"?{query}" if query else "")


OTHER_KIND = {SPANS: PAIRS, PAIRS: SPANS}


# A URL of one project kind under the slug of a project of the other kind (every role below is a member of
# both demo projects). The pairs and judging lookups ask for the kind first: 404 for everyone. The span
# pages below read the project in the URL whatever its kind: their role rule holds, and an allowed role
# gets the status listed (404 where the URL names an object of the other project). None shows anything of
# another project: their queries are the project's own.
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
    "project-export (api)": READ,  # an empty JSONL file
    # 400 "the project has no round 1": a pairs project has no span rounds
    "disputes": frozenset({400}),
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


def wrong_kind(rule: Rule, key: str) -> Rule:
    if key not in KIND_AGNOSTIC:
        return replace(rule, allowed=(), refused=404, overrides={})
    return replace(rule, ok=KIND_AGNOSTIC[key])


def planned_requests(world: World) -> list[Request]:
    planned = []
    for route, pattern in project_patterns():
        if any(route.startswith(prefix) for prefix in NOT_REQUESTED):
            continue
        key = row_key(route, pattern.name)
        rule = EXPECTED[key]
        for kind in rule.kinds or (None,):
            values = world.values[kind]
            planned.append(Request(pattern.name, kind, _url(route, rule, values, pattern.name), rule))
        if rule.kinds is not None and len(rule.kinds) == 1:
            # The URL's own objects, under the slug of a project of the other kind.
            own, other = rule.kinds[0], OTHER_KIND[rule.kinds[0]]
            values = {**world.values[own], "slug": world.values[other]["slug"]}
            planned.append(Request(pattern.name, other, _url(route, rule, values, pattern.name),
                                   wrong_kind(rule, key)))
    # Logging out last: it ends the client's session, which rolling the request back does not give back.
    planned.sort(key=lambda request: request.name == "logout")
    return planned


@dataclass
class Answer:
    status: int
    body: str
    location: str


def ask(client: Client, request: Request, headers: dict[str, str] | None = None) -> Answer:
    """One request, its writes rolled back: every request meets the same demo data, whatever came before.

    A streamed body is read here: a stream that fails after its 200 went out counts as a 500.
    """
    with transaction.atomic():
        if request.rule.method == "GET":
            response = client.get(request.url, headers=headers)
        elif request.rule.body is not None:
            response = client.post(request.url, data=json.dumps(request.rule.body), content_type="application/json",
                                   headers=headers)
        else:
            response = client.post(request.url, headers=headers)
        status = response.status_code
        try:
            raw = b"".join(response.streaming_content) if response.streaming else response.content
        except Exception:  # noqa: BLE001 - whatever broke the stream, the client got a broken download
            raw, status = b"", 500
        transaction.set_rollback(True)
    return Answer(status, raw.decode("utf-8", errors="replace"), response.get("Location", ""))


def _redirects_to_login(answer: Answer) -> bool:
    return answer.status == 302 and answer.location.startswith(django_settings.LOGIN_URL)


# --------------------------------------------------------------------------- the tests


def test_every_url_pattern_has_an_expectation() -> None:
    missing = sorted(
        f"{route} (name {pattern.name!r})"
        for route, pattern in project_patterns()
        if row_key(route, pattern.name) not in EXPECTED and not any(route.startswith(prefix) for prefix in NOT_REQUESTED)
    )
    assert not missing, "URL patterns with no row in EXPECTED (add one, or a reason in NOT_REQUESTED):\n" + "\n".join(
        missing
    )
    assert not set(EXPECTED) - {row_key(route, pattern.name) for route, pattern in project_patterns()}, (
        "rows for URLs that are gone"
    )


HTMX = {"HX-Request": "true"}


@pytest.mark.django_db
def test_every_url_answers_each_role_as_the_access_rules_say(tmp_path: Any, settings: Any) -> None:
    settings.DATA_DIR = tmp_path
    world = load_world(tmp_path)
    clients = {role: world.client(role) for role in ROLES}
    mismatches = []
    asked = 0
    for request in planned_requests(world):
        # Pages are asked twice: as a page and as htmx asks for its fragment, which must obey the same rule.
        variants = [None] if request.rule.api or request.name == "logout" else [None, HTMX]
        for role in ROLES:
            for headers in variants:
                answer = ask(clients[role], request, headers)
                asked += 1
                expected = request.rule.expected(role)
                where = f"{request.describe()}{' (htmx)' if headers else ''} as {role}"
                if answer.status >= 500 or answer.status not in expected:
                    mismatches.append(f"{where}: {answer.status}, expected {sorted(expected)}")
                elif answer.status == 302 and role == ANONYMOUS and ANONYMOUS not in request.rule.allowed:
                    if not _redirects_to_login(answer):
                        mismatches.append(f"{where}: redirect to {answer.location}")
    assert not mismatches, f"{len(mismatches)} of {asked} answers differ:\n" + "\n".join(mismatches)


# --------------------------------------------------------------------------- what annotators never see


def _plain_run(text: str, least: int = 12) -> str | None:
    """The longest stretch of the text's own words that every renderer writes as it is, or None.

    Quoted passages are left out: a judge quotes the summary and the source, which the annotator reads.
    """
    runs = re.findall(r"[A-Za-z0-9 ,.;:()-]+", re.sub(r'"[^"]*"', '"', text))
    best = max((run.strip() for run in runs), key=len, default="")
    return best[:40] if len(best) >= least else None


def _offsets(start: int, end: int) -> re.Pattern[str]:
    """A span's offsets as JSON writes them (compact or spaced), on the API and in the pages' json_script."""
    return re.compile(rf'"start":\s*{start},\s*"end":\s*{end}\b')


def hidden_from_annotators(world: World, annotator: Any) -> dict[str, str | re.Pattern[str]]:
    """What no response the annotator may read holds: a description -> a text or a pattern."""
    spans_project, pairs_project = world.projects[SPANS], world.projects[PAIRS]
    hidden: dict[str, str | re.Pattern[str]] = {}
    for sample in Sample.objects.filter(project=spans_project):
        for key in sample.metadata:
            hidden[f"detector/metadata key {key!r}"] = key
        hidden[f"generator {sample.generator!r}"] = sample.generator
    assert {"hhem-2.1", "gpt_4o"} <= {key.split("'")[1] for key in hidden if key.startswith("detector")}
    for judge in Judge.objects.filter(project=spans_project):
        hidden[f"judge name {judge.name!r}"] = judge.name
    for judgement in Judgement.objects.filter(run__project=spans_project).exclude(reasoning=""):
        snippet = _plain_run(judgement.reasoning, least=20)
        if snippet:
            hidden[f"reasoning of judgement {judgement.pk}"] = snippet
    hidden["judge score control"] = 'data-role="judge-score"'
    hidden["judge reasoning block"] = 'data-role="judge-reasoning"'
    mine = set(SpanAnnotation.objects.filter(annotator=annotator, round=1).values_list("start", "end"))
    others = SpanAnnotation.objects.filter(sample=world.sample, round=1).exclude(annotator=annotator)
    assert others.exists(), "the sample has no other annotator's round-1 span to look for"
    for span in others:
        if span.note and (snippet := _plain_run(span.note, least=8)):
            hidden[f"{span.annotator.username}'s round-1 note {span.pk}"] = snippet
        if (span.start, span.end) not in mine:
            hidden[f"{span.annotator.username}'s round-1 offsets {span.start}-{span.end}"] = _offsets(span.start, span.end)
        hidden[f"{span.annotator.username}'s name"] = re.compile(rf"\b{re.escape(span.annotator.username)}\b")
    for flag in JudgeFlag.objects.filter(project=pairs_project).select_related("judge"):
        hidden[f"spammer flag rule name {flag.rule}"] = flag.get_rule_display()
        hidden[f"spammer flag figures {flag.pk}"] = spam.explain(flag.rule, flag.figures)
        hidden[f"flagged judge {flag.judge.username}"] = re.compile(rf"\b{re.escape(flag.judge.username)}\b")
    # Everyone's answers on pair items: reviewers' fields, never in an annotator's JSON.
    for key in ("votes", "consensus", "items_by_state", "funnel"):
        hidden[f"pair reviewers' field {key!r}"] = f'"{key}"'
    # The project pages' parts for other roles (templates/annotate/project.html, pairs/project.html).
    for marker in ('data-role="figures-links"', 'data-role="judging-links"', 'data-role="browse-samples"',
                   "<h2>Export the labeled dataset</h2>", "<h2>Rounds and agreement</h2>"):
        hidden[f"reviewers' part {marker}"] = marker
    return hidden


def leaks_in(body: str, hidden: dict[str, str | re.Pattern[str]]) -> list[str]:
    found = []
    for what, needle in hidden.items():
        if isinstance(needle, str):
            if needle in body:
                found.append(what)
        elif needle.search(body):
            found.append(what)
    return found


HTMX_TARGETS = ("progress", "pair-status")


@pytest.mark.django_db
@pytest.mark.parametrize("role", [ANNOTATOR, UNASSIGNED])
def test_nothing_an_annotator_can_read_holds_what_annotators_must_not_see(
    role: str, tmp_path: Any, settings: Any
) -> None:
    settings.DATA_DIR = tmp_path
    world = load_world(tmp_path)
    assert not world.projects[SPANS].reveal_generator, "the demo project hides its generators"
    hidden = hidden_from_annotators(world, world.users[role])
    client = world.client(role)
    read = []
    leaks = []
    for request in planned_requests(world):
        if request.name == "logout":
            continue
        answer = ask(client, request)
        if answer.status != 200:
            continue
        read.append(request.url)
        leaks += [f"{request.describe()}: {what}" for what in leaks_in(answer.body, hidden)]
        if request.rule.method == "GET" and not request.rule.api:
            # The htmx fragments the pages serve for themselves (annotation.project_detail, pairs.project_page).
            for target in HTMX_TARGETS:
                fragment = ask(client, request, headers={"HX-Request": "true", "HX-Target": target})
                assert fragment.status < 500, f"{request.describe()} for htmx target {target}: {fragment.status}"
                leaks += [f"{request.describe()} (htmx {target}): {what}" for what in leaks_in(fragment.body, hidden)]
    # The annotator's own pages were read, not refused: the home page, the sample, its spans, the pair queue.
    sample_url = f"/projects/{world.projects[SPANS].slug}/samples/{world.sample.pk}/"
    own = {"/", f"/projects/{world.projects[PAIRS].slug}/pairs/label/"}
    if role == ANNOTATOR:
        own |= {sample_url, f"/api/samples/{world.sample.pk}/spans/"}
    assert own <= set(read)
    assert any(url.startswith("/api/pairs/next/") for url in read)
    # The probes find what they look for where it may be shown: the same sample, its spans and the flags, read
    # by the superuser.
    admin = world.client(SUPERUSER)
    seen = set()
    for url in (sample_url, f"/api/samples/{world.sample.pk}/", f"/api/samples/{world.sample.pk}/spans/",
                f"/projects/{world.projects[PAIRS].slug}/pairs/flags/",
                f"/projects/{world.projects[SPANS].slug}/audit/", f"/projects/{world.projects[SPANS].slug}/",
                f"/projects/{world.projects[PAIRS].slug}/", f"/api/pairs/?project={world.projects[PAIRS].slug}"):
        response = admin.get(url)
        assert response.status_code == 200, url
        seen |= set(leaks_in(response.content.decode(), hidden))
    probes = ("detector/metadata key 'hhem-2.1'", "generator ", "dave's round-1 note", "dave's round-1 offsets",
              "spammer flag figures", "flagged judge frank", "judge score control", "reasoning of judgement",
              "pair reviewers' field 'votes'", 'reviewers\' part data-role="figures-links"',
              "reviewers' part <h2>Rounds and agreement</h2>")
    for kind in probes:
        assert any(what.startswith(kind) for what in seen), f"no probe for {kind!r} matched the superuser's pages"
    assert not leaks, f"{len(leaks)} leaks in {len(read)} responses the annotator read:\n" + "\n".join(leaks)


# --------------------------------------------------------------------------- Django's admin site


@pytest.mark.django_db
def test_django_admin_is_for_site_staff_only(tmp_path: Any, settings: Any) -> None:
    settings.DATA_DIR = tmp_path
    world = load_world(tmp_path)
    for role in ROLES:
        response = world.client(role).get("/admin/")
        if role == SUPERUSER:
            assert response.status_code == 200, role
        else:  # a project admin is no site staff: the admin site sends everyone else to its own login
            assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), role


# --------------------------------------------------------------------------- what the audit mended


@pytest.mark.django_db
def test_api_urls_have_no_format_suffix_twins(tmp_path: Any, settings: Any) -> None:
    """The router's ".json" twins answered 500 on every action (batches, export, flag, gold, others, review,
    similarity, spans: the actions take no format argument); the API speaks JSON only, so they are gone."""
    settings.DATA_DIR = tmp_path
    world = load_world(tmp_path)
    admin = world.client(SUPERUSER)
    pk, slug = world.sample.pk, world.projects[SPANS].slug
    for url in (f"/api/samples/{pk}/spans.json/", f"/api/projects/{slug}/batches.json/", f"/api/samples/{pk}.json/",
                "/api/projects.json/", "/api/.json"):
        assert admin.get(url).status_code == 404, url
    assert admin.post(f"/api/samples/{pk}/review.json/").status_code == 404
    spans = admin.get(f"/api/samples/{pk}/spans/")
    assert spans.status_code == 200
    assert {span["annotator"] for span in spans.json()} == {"carol", "dave"}
    assert not [route for route, _ in project_patterns() if "(?P<format>" in route or "drf_format_suffix" in route]


@pytest.mark.django_db
def test_pairs_export_of_a_span_project_is_404_like_every_pairs_page(tmp_path: Any, settings: Any) -> None:
    """It answered 200 and then broke off the download (the span project has no pairs to export)."""
    settings.DATA_DIR = tmp_path
    world = load_world(tmp_path)
    spans_slug, pairs_slug = world.projects[SPANS].slug, world.projects[PAIRS].slug
    for role in (AUDITOR, ADMIN, SUPERUSER):
        assert world.client(role).get(f"/projects/{spans_slug}/pairs/export/pairs/").status_code == 404, role
    export = world.client(AUDITOR).get(f"/projects/{pairs_slug}/pairs/export/pairs/")
    assert export.status_code == 200
    lines = [json.loads(line) for line in b"".join(export.streaming_content).decode().splitlines()]
    assert len(lines) == PairItem.objects.filter(project=world.projects[PAIRS]).count() == 72
    for role, status in ((ANNOTATOR, 403), (CURATOR, 403), (OUTSIDER, 404)):
        assert world.client(role).get(f"/projects/{pairs_slug}/pairs/export/hades/").status_code == status, role


@pytest.mark.django_db
def test_a_curator_reads_any_span_of_the_project_by_id_as_on_the_samples_spans(tmp_path: Any, settings: Any) -> None:
    """GET /api/spans/<id>/ answered a curator 404 for spans that /api/samples/<id>/spans/ shows them."""
    settings.DATA_DIR = tmp_path
    world = load_world(tmp_path)
    curator = world.client(CURATOR)
    dave_span = SpanAnnotation.objects.get(pk=world.values[SPANS]["span"])
    answer = curator.get(f"/api/spans/{dave_span.pk}/")
    assert answer.status_code == 200
    assert (answer.json()["annotator"], answer.json()["start"], answer.json()["end"]) == (
        "dave", dave_span.start, dave_span.end
    )
    listed = curator.get("/api/spans/?limit=1000").json()["results"]
    assert {span["id"] for span in listed} == set(
        SpanAnnotation.objects.filter(sample__project=world.projects[SPANS]).values_list("pk", flat=True)
    )
    # Reading is all: the span stays its author's to change, and the annotator beside dave still cannot see it.
    assert curator.patch(f"/api/spans/{dave_span.pk}/", data={"version": dave_span.version, "note": "x"},
                         content_type="application/json").status_code == 403
    assert world.client(ANNOTATOR).get(f"/api/spans/{dave_span.pk}/").status_code == 404
