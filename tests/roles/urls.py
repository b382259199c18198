"""The project's URL patterns, their parameters filled from the demo, and asking them with every write rolled back."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.conf import settings as django_settings
from django.db import transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from tests.roles.expectations import EXPECTED, MORE_METHODS, NOT_REQUESTED, OTHER_KIND, Rule, row_key, wrong_kind
from tests.roles.world import World


def _walk(patterns: list[Any], prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry.url_patterns, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def project_patterns() -> list[tuple[str, URLPattern]]:
    return list(_walk(get_resolver().url_patterns))


def api_view_methods(pattern: URLPattern) -> set[str]:
    """The methods a DRF view answers (a viewset's routed actions, an APIView's handlers); empty for a Django view,
    whose decorators keep their methods to themselves. OPTIONS and HEAD come with every view: not counted."""
    view = pattern.callback
    actions = getattr(view, "actions", None)
    if actions:
        return {method.upper() for method in actions if method not in ("options", "head")}
    cls = getattr(view, "cls", None)
    if cls is None:
        return set()
    return {method.upper() for method in cls.http_method_names
            if method not in ("options", "head") and hasattr(cls, method)}


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
    "batch-submit": {"pk": "batch"},
    "batch-round-two": {"pk": "batch"},
    "batch-reopen": {"pk": "batch"},
    "api-batch-assignments": {"id": "batch"},
    "api-project-job": {"id": "job"},
    "api-embedding-job-cancel": {"id": "job"},
    "api-export-job-cancel": {"id": "export"},
    "job-cancel": {"pk": "job"},
    "api-member": {"username": "member_username"},
    "flag-resolve": {"pk": "flag"},
    "sample": {"pk": "sample"},
    "job": {"pk": "job"},
    "export-download": {"pk": "export"},
    "adjudicate": {"pk": "sample"},
    "api-token-revoke": {"pk": "token_pk"},
    "pairs-round-job": {"pk": "round_job"},
    "pairs-round-job-cancel": {"pk": "round_job"},
    "api-pair-round-job-cancel": {"id": "round_job"},
    "pairs-perturb-job-cancel": {"pk": "perturb_job"},
    "api-perturbation-job-cancel": {"id": "perturb_job"},
    "pairs-round": {"number": "round"},
    "api-pair-round": {"number": "round"},
    "pairs-flag-block": {"pk": "judge_flag"},
    "pairs-flag-dismiss": {"pk": "judge_flag"},
    "pairs-judge-unblock": {"pk": "blocked_judge"},
    "judging-judge-create": {"kind": "judge_kind"},
    "judging-judge-update": {"pk": "judge"},
    "judging-prompt": {"kind": "prompt_kind"},
    "judging-run": {"pk": "run"},
    "judging-run-cancel": {"pk": "run"},
    "judging-people": {"pk": "judge"},
    "judging-audit-submit": {"item_id": "audit_item"},
    "judging-audit-reveal": {"item_id": "audit_item"},
    "judging-audit-answered": {"audit_id": "audit"},
    "judging-synthetic-set": {"pk": "synthetic"},
    "judging-synthetic-run": {"pk": "synthetic"},
    "judging-synthetic-resume": {"pk": "synthetic"},
    "judging-synthetic-cancel": {"pk": "synthetic"},
    "span-detail": {"pk": "span"},
    "judging-api-run": {"id": "run"},
    "judging-api-run-judgements": {"id": "run"},
    "judging-api-run-cancel": {"id": "run"},
    "judging-api-judge-people": {"id": "judge"},
    "judging-api-synthetic-tables": {"id": "synthetic"},
    "judging-api-synthetic-cancel": {"id": "synthetic"},
    "api-audit-verdict": {"id": "audit_item"},
    "api-audit-change": {"id": "audit"},
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


def planned_requests(world: World) -> list[Request]:
    planned = []
    for route, pattern in project_patterns():
        if any(route.startswith(prefix) for prefix in NOT_REQUESTED):
            continue
        key = row_key(route, pattern.name)
        for rule in (EXPECTED[key], *MORE_METHODS.get(key, ())):
            planned += _requests_of(route, pattern.name, key, rule, world)
    # Logging out last: it ends the client's session, which rolling the request back does not give back.
    planned.sort(key=lambda request: request.name == "logout")
    return planned


def _requests_of(route: str, name: str, key: str, rule: Rule, world: World) -> list[Request]:
    """The requests of one URL and method: under each project kind its rule names, and under the other kind."""
    planned = []
    for kind in rule.kinds or (None,):
        values = world.values[kind]
        planned.append(Request(name, kind, _url(route, rule, values, name), rule.under(kind)))
    if rule.kinds is not None and len(rule.kinds) == 1:
        # The URL's own objects, under the slug of a project of the other kind.
        own, other = rule.kinds[0], OTHER_KIND[rule.kinds[0]]
        values = {**world.values[own], "slug": world.values[other]["slug"]}
        planned.append(Request(name, other, _url(route, rule, values, name), wrong_kind(rule, key)))
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
        elif request.rule.method in ("PUT", "PATCH", "DELETE"):
            send = getattr(client, request.rule.method.lower())
            response = send(request.url, data=json.dumps(request.rule.body or {}), content_type="application/json",
                            headers=headers)
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


def redirects_to_login(answer: Answer) -> bool:
    return answer.status == 302 and answer.location.startswith(django_settings.LOGIN_URL)
