"""The agreement page (sample alpha, span agreement, exclusions) and the disputes page it links to,
and who may open the agreement, disputes and results pages. The scene is in results_scene.py."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest
from django.test import Client

from annotate import agreement
from annotate.models import Assignment, Batch, Membership, Project
from annotate.services import stats
from tests.annotate.results_scene import DEFAULTS, HTMX, Tags, alpha_of, same, span, tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]


# --------------------------------------------------------------------------- agreement page


def test_agreement_page_shows_the_alpha_of_stats_for_each_default_scheme_and_level(scene: dict[str, Any]) -> None:
    response = login(scene["audrey"]).get("/projects/demo/agreement/")
    assert response.status_code == 200
    page = tags(response)
    for scheme in DEFAULTS:
        for level in agreement.LEVELS:
            report = stats.project_agreement(scene["project"], scheme, level, "pooled", 1, bootstrap=200)
            cell = page.one("td", data_scheme=scheme, data_level=level, data_round="1")
            assert same(alpha_of(cell), report["alpha"]), (scheme, level)
            assert int(cell["data-units"]) == report["units"]
            assert int(cell["data-annotators"]) == report["annotators"] == 3
    html = response.content.decode()
    interval = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "pooled", 1, bootstrap=200)["interval"]
    assert f"[{interval[0]:.3f}, {interval[1]:.3f}]" in html


def test_agreement_page_per_batch_and_pairwise_tables_match_stats(scene: dict[str, Any]) -> None:
    page = tags(login(scene["admin"]).get("/projects/demo/agreement/?level=ordinal&scheme=C|B|Q|U"))
    report = stats.project_agreement(scene["project"], "C|B|Q|U", "ordinal", "pooled", 1)
    for entry, batch in zip(report["per_batch"], (scene["batch1"], scene["batch2"]), strict=True):
        assert entry["batch"] == batch.name
        cell = page.one("td", data_batch=str(batch.pk), data_scheme="C|B|Q|U", data_round="1")
        assert same(alpha_of(cell), entry["alpha"])
    pairs = stats.project_pairwise_alpha(scene["project"], "C|B|Q|U", "ordinal", 1)
    assert len(pairs) == 3
    for pair in pairs:
        row = page.one("tr", data_pair="|".join(pair["annotators"]))
        assert same(alpha_of(row), pair["alpha"])


def test_low_batch_cells_link_to_the_disputed_samples(scene: dict[str, Any]) -> None:
    html = login(scene["admin"]).get("/projects/demo/agreement/?scheme=C|B|Q|U&level=nominal").content.decode()
    report = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "pooled", 1)
    assert any(entry["alpha"] is None or entry["alpha"] < 0.667 for entry in report["per_batch"])
    assert f"/projects/demo/disputes/?batch={scene['batch1'].pk}&amp;round=1&amp;scheme=C%7CB%7CQ%7CU" in html


def test_per_batch_table_is_paged(scene: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from annotate.views.agreement import tables as agreement_tables

    monkeypatch.setattr(agreement_tables, "BATCHES_PER_PAGE", 1)
    client = login(scene["admin"])
    first = tags(client.get("/projects/demo/agreement/?level=nominal"))
    assert [row["data-batch"] for row in first.find("tr") if "data-batch" in row] == [str(scene["batch1"].pk)]
    assert first.one("a", rel="next")["href"] == "/projects/demo/agreement/?" + urlencode(
        {"scheme": ", ".join(DEFAULTS), "level": "nominal", "aggregate": "pooled", "bpage": 2})
    second = tags(client.get(first.one("a", rel="next")["href"]))
    assert [row["data-batch"] for row in second.find("tr") if "data-batch" in row] == [str(scene["batch2"].pk)]
    assert client.get("/projects/demo/agreement/?bpage=0").status_code == 400


def test_rounds_are_shown_side_by_side(scene: dict[str, Any]) -> None:
    s0 = scene["s"][0]
    for user in (scene["alice"], scene["bob"]):
        Assignment.objects.create(batch=scene["batch1"], annotator=user, round=2, status=Assignment.Status.SUBMITTED)
        span(s0, user, ["Unwanted"], round=2)
    page = tags(login(scene["admin"]).get("/projects/demo/agreement/?level=nominal"))
    for round in (1, 2):
        report = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "pooled", round)
        cell = page.one("td", data_scheme="C|B|Q|U", data_level="nominal", data_round=str(round))
        assert same(alpha_of(cell), report["alpha"])
    only_two = tags(login(scene["admin"]).get("/projects/demo/agreement/?round=2"))
    assert only_two.find("td", data_level="nominal", data_round="1") == []


def test_span_agreement_section_shows_token_alpha_and_span_f1_of_the_pure_module(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    full = client.get("/projects/demo/agreement/").content.decode()
    assert 'hx-get="/projects/demo/agreement/?scheme=' in full and "section=spans" in full  # loaded lazily
    response = client.get("/projects/demo/agreement/?scheme=C|B|Q|U&section=spans", **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="span-agreement"')
    page = Tags(html)
    spans = stats.batch_spans(scene["project"], 1)
    token = agreement.token_alpha(spans, "C|B|Q|U")
    assert same(alpha_of(page.one("tr", data_role="token-alpha")), token.alpha)
    sample_level = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "pooled", 1)
    assert same(alpha_of(page.one("tr", data_role="sample-alpha")), sample_level["alpha"])
    for mode in agreement.SPAN_MODES:
        for entry in agreement.pairwise_span_f1(spans, mode):
            page.one("tr", data_pair="|".join(entry["annotators"]))
            f1 = entry["overall"]["f1"]
            cells = page.find("td", data_mode=mode, data_label="overall")
            assert any(cell["data-f1"] == ("" if f1 is None else repr(f1)) for cell in cells)
            for label, scores in entry["per_label"].items():
                wanted = "" if scores["f1"] is None else repr(scores["f1"])
                assert any(cell["data-f1"] == wanted for cell in page.find("td", data_mode=mode, data_label=label))
    # Without htmx the same link gives the whole page with the section in place.
    plain = client.get("/projects/demo/agreement/?section=spans").content.decode()
    assert "<html" in plain and 'data-role="token-alpha"' in plain


def test_agreement_page_htmx_request_gets_only_the_results_partial(scene: dict[str, Any]) -> None:
    response = login(scene["admin"]).get("/projects/demo/agreement/?level=interval", **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="agreement-results">')
    assert "<html" not in html and 'data-role="agreement-form"' not in html
    assert Tags(html).find("td", data_level="interval", data_scheme="C|B|Q|U")


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("scheme=C|X", "scheme: scheme 'C|X': unknown category 'X'"),
        ("scheme=CU", "join categories with '+'"),
        ("scheme=C", "needs at least two groups"),
        ("level=ratio", "level: 'ratio' is not one of nominal, ordinal, interval"),
        ("aggregate=median", "aggregate: 'median' is not one of pooled, batch-mean"),
        ("round=7", "round: the project has no round 7 (rounds with assignments: 1)"),
        ("round=two", "round: 'two' is not a round number"),
        ("bootstrap=-1", "bootstrap: must be a whole number between 0 and 2000"),
        ("bpage=x", "bpage: must be a whole number at least 1"),
    ],
)
def test_agreement_page_rejects_bad_parameters_with_a_message(scene: dict[str, Any], query: str, message: str) -> None:
    client = login(scene["admin"])
    for extra in ({}, HTMX):
        response = client.get(f"/projects/demo/agreement/?{query}", **extra)
        assert response.status_code == 400
        assert message in response.content.decode().replace("&#x27;", "'")


def test_agreement_pages_are_for_admins_and_auditors_only(scene: dict[str, Any], charlie: Any) -> None:
    urls = [
        "/projects/demo/agreement/",
        f"/projects/demo/disputes/?batch={scene['batch1'].pk}",
        "/projects/demo/results/",
        "/api/projects/demo/agreement/?scheme=C|U",
        "/api/projects/demo/halu-rates/",
        "/api/projects/demo/detector-eval/",
    ]
    for url in urls:
        assert login(charlie).get(url).status_code == 404, url
        assert login(scene["alice"]).get(url).status_code == 403, url  # annotators: no one else's work
        assert login(scene["audrey"]).get(url).status_code == 200, url
        # Anonymous: pages send to the login form, the API answers 401.
        assert Client().get(url).status_code == (401 if url.startswith("/api/") else 302), url


def test_pages_reject_the_wrong_method(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    for url in ("/projects/demo/agreement/", "/projects/demo/disputes/", "/projects/demo/results/"):
        assert client.post(url).status_code == 405
    for url in ("/projects/demo/agreement/exclusion/", "/projects/demo/results/selection/"):
        assert client.get(url).status_code == 405


def test_empty_project_pages_say_there_is_nothing_yet(admin_user: Any) -> None:
    project = Project.objects.create(name="Empty", slug="empty")
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    client = login(admin_user)
    for url in ("/projects/empty/agreement/", "/projects/empty/results/"):
        response = client.get(url)
        assert response.status_code == 200
        assert 'data-role="empty"' in response.content.decode()


def test_project_page_links_agreement_and_results_for_admins_and_auditors(scene: dict[str, Any]) -> None:
    for user, shown in ((scene["admin"], True), (scene["audrey"], True), (scene["alice"], False)):
        html = login(user).get("/projects/demo/").content.decode()
        assert ('href="/projects/demo/agreement/"' in html and 'href="/projects/demo/results/"' in html) is shown


# --------------------------------------------------------------------------- exclusion


def test_admin_exclusion_toggle_changes_the_alpha(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    url = "/projects/demo/agreement/?scheme=C|B|Q|U&level=nominal"
    before = alpha_of(tags(client.get(url)).one("td", data_scheme="C|B|Q|U", data_level="nominal", data_round="1"))
    dora = Assignment.objects.get(batch=scene["batch1"], annotator=scene["dora"])
    response = client.post(
        "/projects/demo/agreement/exclusion/",
        {"assignment": dora.pk, "excluded": "1", "back": "scheme=C|B|Q|U&level=nominal"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/projects/demo/agreement/?scheme=C%7CB%7CQ%7CU&level=nominal"
    dora.refresh_from_db()
    assert dora.excluded_from_agreement is True
    page = tags(client.get(url))
    after = alpha_of(page.one("td", data_scheme="C|B|Q|U", data_level="nominal", data_round="1"))
    expected = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "pooled", 1)["alpha"]
    assert same(after, expected) and after != pytest.approx(before)
    assert "excluded" in page.one("span", data_assignment=str(dora.pk))["class"]
    # ... and back again, through htmx this time.
    response = client.post("/projects/demo/agreement/exclusion/", {"assignment": dora.pk, "excluded": "0"}, **HTMX)
    assert response.status_code == 200 and response["HX-Redirect"] == "/projects/demo/agreement/"
    again = tags(client.get(url)).one("td", data_scheme="C|B|Q|U", data_level="nominal", data_round="1")
    assert same(alpha_of(again), before)


def test_only_admins_toggle_exclusion(scene: dict[str, Any], charlie: Any) -> None:
    dora = Assignment.objects.get(batch=scene["batch1"], annotator=scene["dora"])
    body = {"assignment": dora.pk, "excluded": "1"}
    assert login(scene["audrey"]).post("/projects/demo/agreement/exclusion/", body).status_code == 403
    assert login(scene["alice"]).post("/projects/demo/agreement/exclusion/", body).status_code == 403
    assert login(charlie).post("/projects/demo/agreement/exclusion/", body).status_code == 404
    admin = login(scene["admin"])
    assert admin.post("/projects/demo/agreement/exclusion/", {"assignment": dora.pk, "excluded": "maybe"}).status_code == 400
    assert admin.post("/projects/demo/agreement/exclusion/", {"assignment": "x", "excluded": "1"}).status_code == 400
    other = Project.objects.create(name="Other", slug="other")
    foreign_batch = Batch.objects.create(project=other, name="b")
    foreign = Assignment.objects.create(batch=foreign_batch, annotator=scene["alice"])
    assert admin.post("/projects/demo/agreement/exclusion/", {"assignment": foreign.pk, "excluded": "1"}).status_code == 404
    dora.refresh_from_db()
    assert dora.excluded_from_agreement is False
    assert login(scene["audrey"]).get("/projects/demo/agreement/").content.decode().count('name="excluded"') == 0


# --------------------------------------------------------------------------- disputes


def test_disputes_page_lists_samples_whose_worst_labels_differ(scene: dict[str, Any]) -> None:
    t = scene["t"]
    response = login(scene["audrey"]).get(f"/projects/demo/disputes/?batch={scene['batch2'].pk}&round=1")
    assert response.status_code == 200
    page = tags(response)
    assert [row["data-sample"] for row in page.find("tr") if "data-sample" in row] == [str(t[1].pk)]
    labels = {cell["data-annotator"]: cell["data-label"] for cell in page.find("td") if "data-annotator" in cell}
    assert labels == {"alice": "C", "bob": "B"}
    assert page.one("a", data_role="sample-link")["href"] == f"/projects/demo/samples/{t[1].pk}/?round=1"
    # C and B are one group under C+B|Q+U: no dispute left.
    merged = tags(login(scene["audrey"]).get(f"/projects/demo/disputes/?batch={scene['batch2'].pk}&scheme=C%2BB|Q%2BU"))
    assert [row for row in merged.find("tr") if "data-sample" in row] == []


def test_disputes_page_shows_every_annotators_label_in_a_three_person_batch(scene: dict[str, Any]) -> None:
    page = tags(login(scene["admin"]).get(f"/projects/demo/disputes/?batch={scene['batch1'].pk}"))
    s0, s1, s2 = scene["s"]
    assert [row["data-sample"] for row in page.find("tr") if "data-sample" in row] == [str(s.pk) for s in (s0, s1, s2)]
    assert [cell["data-label"] for cell in page.find("td") if "data-annotator" in cell][:3] == ["U", "U", "Q"]


def test_disputes_page_bad_input_and_htmx(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    missing = client.get("/projects/demo/disputes/")  # no batch: a chooser, not a 400 (test_disputes_chooser.py)
    assert missing.status_code == 200 and 'data-role="batch-chooser"' in missing.content.decode()
    assert client.get("/projects/demo/disputes/?batch=abc").status_code == 400
    bad_round = client.get(f"/projects/demo/disputes/?batch={scene['batch1'].pk}&round=3")
    assert bad_round.status_code == 400 and "no round 3" in bad_round.content.decode()
    bad_scheme = client.get(f"/projects/demo/disputes/?batch={scene['batch1'].pk}&scheme=C|Z", **HTMX)
    assert bad_scheme.status_code == 400 and "unknown category" in bad_scheme.content.decode()
    other = Batch.objects.create(project=Project.objects.create(name="O", slug="o"), name="b")
    assert client.get(f"/projects/demo/disputes/?batch={other.pk}").status_code == 404
    partial = client.get(f"/projects/demo/disputes/?batch={scene['batch2'].pk}", **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="disputes-results">') and "<html" not in partial
