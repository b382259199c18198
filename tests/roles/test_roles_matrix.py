"""Every URL of the project, asked by every role: who gets in, who is refused, and what annotators never see.

The demo data (manage.py load_demo) fills the path parameters; four more accounts
give the roles the demo lacks. Each URL is asked by eight callers (anonymous, an
outsider, two annotators, an auditor, a curator, a project admin, the superuser),
under a project of its own kind and of the other kind, pages also as htmx asks
for them; every request is rolled back, so each meets the same data. A URL
pattern added without a row in expectations.EXPECTED (or a reason in
NOT_REQUESTED) fails test_every_url_pattern_has_an_expectation.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import PairItem, SpanAnnotation
from tests.roles.expectations import (
    ADMIN,
    ANNOTATOR,
    ANONYMOUS,
    AUDITOR,
    CURATOR,
    EXPECTED,
    MORE_METHODS,
    NOT_REQUESTED,
    OUTSIDER,
    PAIRS,
    ROLES,
    SPANS,
    SUPERUSER,
    UNASSIGNED,
    row_key,
)
from tests.roles.leaks import hidden_from_annotators, leaks_in
from tests.roles.urls import api_view_methods, ask, planned_requests, project_patterns, redirects_to_login
from tests.roles.world import load_world


def test_every_url_pattern_has_an_expectation() -> None:
    missing = sorted(
        f"{route} (name {pattern.name!r})"
        for route, pattern in project_patterns()
        if row_key(route, pattern.name) not in EXPECTED and not any(route.startswith(prefix) for prefix in NOT_REQUESTED)
    )
    assert not missing, "URL patterns with no row in EXPECTED (add one, or a reason in NOT_REQUESTED):\n" + "\n".join(
        missing
    )
    assert not (set(EXPECTED) | set(MORE_METHODS)) - {row_key(route, pattern.name) for route, pattern in
                                                        project_patterns()}, "rows for URLs that are gone"


def test_every_api_method_has_an_expectation() -> None:
    """A method added to an endpoint (PATCH beside PUT) is asked by every role too, not only the first method."""
    missing, gone = [], []
    for route, pattern in project_patterns():
        key = row_key(route, pattern.name)
        if key not in EXPECTED:
            continue  # NOT_REQUESTED, or test_every_url_pattern_has_an_expectation names it
        rows = [rule.method for rule in (EXPECTED[key], *MORE_METHODS.get(key, ()))]
        assert len(rows) == len(set(rows)), f"{key}: two rows for one method"
        answered = api_view_methods(pattern)
        missing += [f"{method} {route} (name {key!r})" for method in sorted(answered - set(rows))]
        gone += [f"{method} {route} (name {key!r})" for method in sorted(set(rows) - answered) if answered]
    assert not missing, "API methods with no row (add one to MORE_METHODS):\n" + "\n".join(missing)
    assert not gone, "rows for methods the view no longer answers:\n" + "\n".join(gone)


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
                if headers and role == ANONYMOUS and 302 in expected:
                    # htmx is told "logged out" (401) rather than sent the login page to swap in (session_guard).
                    expected = (set(expected) - {302}) | {401}
                where = f"{request.describe()}{' (htmx)' if headers else ''} as {role}"
                if answer.status >= 500 or answer.status not in expected:
                    mismatches.append(f"{where}: {answer.status}, expected {sorted(expected)}")
                elif answer.status == 302 and role == ANONYMOUS and ANONYMOUS not in request.rule.allowed:
                    if not redirects_to_login(answer):
                        mismatches.append(f"{where}: redirect to {answer.location}")
    assert not mismatches, f"{len(mismatches)} of {asked} answers differ:\n" + "\n".join(mismatches)


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
        assert admin.get(url, follow=True).status_code == 404, url  # "/api/.json" goes to "/api/.json/" first
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
