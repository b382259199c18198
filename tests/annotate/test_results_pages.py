"""Agreement, disputes and results pages, their API, and the admin actions behind them.

The scenario, on conftest's project "demo" (admin adam, annotators alice and bob)
plus an auditor (audrey) and a third annotator (dora):

- batch-1 (passage p1, samples s0 s1 s2 by model-a, model-b, model-c), submitted by
  alice, bob and dora. Worst labels: s0 U U Q; s1 B Q C; s2 C C U.
- batch-2 (passage p2, samples t0..t3 by model-a, model-b, model-c, model-a), submitted
  by alice and bob. Worst labels: t0 U U; t1 C B; t2 Q Q; t3 C C.
- Two detectors in every sample's metadata, hhem (probability) and gpt (0/1 verdict);
  they disagree on s0, s2, t0 and t3: two challenging samples in each passage group.
"""

from __future__ import annotations

import io
import json
import re
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client

from annotate import agreement
from annotate.models import Assignment, Batch, FigureSet, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.results import rank_generators
from annotate.services import agreement_admin, results_cache, stats
from tests.conftest import login, make_user

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
DEFAULTS = ("C+B|Q+U", "C+B|Q|U", "C|B|Q|U")


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, to find the cells by their data-* attributes."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    def find(self, tag: str | None = None, **wanted: str) -> list[dict[str, str]]:
        wanted = {name.replace("_", "-"): value for name, value in wanted.items()}
        return [
            attrs
            for name, attrs in self.tags
            if (tag is None or name == tag) and all(attrs.get(key) == value for key, value in wanted.items())
        ]

    def one(self, tag: str | None = None, **wanted: str) -> dict[str, str]:
        found = self.find(tag, **wanted)
        assert len(found) == 1, f"expected one {tag} with {wanted}, found {len(found)}"
        return found[0]


def tags(response: Any) -> Tags:
    return Tags(response.content.decode())


def alpha_of(attrs: dict[str, str]) -> float | None:
    return float(attrs["data-alpha"]) if attrs["data-alpha"] else None


def same(value: float | None, expected: float | None) -> bool:
    return value is None and expected is None or (value is not None and value == pytest.approx(expected))


@pytest.fixture(autouse=True)
def empty_cache() -> None:
    # The figures cache is keyed by project id and data version; ids repeat between tests.
    cache.clear()


@pytest.fixture(autouse=True)
def quick_passwords(settings: Any) -> None:
    # Autouse fixtures run first, so conftest's users are hashed quickly too (PBKDF2 costs ~0.3 s a user).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def span(sample: Sample, user: Any, labels: list[str], start: int = 0, end: int = 10, round: int = 1) -> None:
    SpanAnnotation.objects.create(
        sample=sample, annotator=user, round=round, start=start, end=end, text=sample.summary[start:end], labels=labels
    )


@pytest.fixture
def scene(project: Project, batch: Batch, admin_user: Any, alice: Any, bob: Any) -> dict[str, Any]:
    audrey, dora = make_user("audrey"), make_user("dora")
    Membership.objects.create(project=project, user=audrey, role=Membership.Role.AUDITOR)
    Membership.objects.create(project=project, user=dora, role=Membership.Role.ANNOTATOR)
    Assignment.objects.filter(batch=batch).update(status=Assignment.Status.SUBMITTED)
    Assignment.objects.create(batch=batch, annotator=dora, status=Assignment.Status.SUBMITTED)
    s0, s1, s2 = batch.samples.order_by("position")
    for sample, hhem, gpt in ((s0, 0.2, 1), (s1, 0.8, 1), (s2, 0.9, 0)):
        sample.metadata = {"summarizer": sample.generator, "hhem": hhem, "gpt": gpt}
        sample.save()
    span(s0, alice, ["Unwanted", "Unwanted.Intrinsic"])
    span(s0, bob, ["Unwanted.Extrinsic"])
    span(s0, dora, ["Questionable"])
    span(s1, alice, ["Benign"], 5, 15)
    span(s1, bob, ["Questionable"], 8, 20)
    span(s2, dora, ["Unwanted"], 0, 5)

    second = Batch.objects.create(project=project, name="batch-2", position=1)
    passage = Passage.objects.create(project=project, external_id="p2", text="Another source text.")
    generators = ["model-a", "model-b", "model-c", "model-a"]
    detectors = [(0.7, 0), (0.3, 0), (0.6, 1), (0.1, 1)]
    t = [
        Sample.objects.create(
            project=project, passage=passage, batch=second, position=position, external_id=f"t{position}",
            summary=f"Second batch summary number {position} with a few words.", generator=generator,
            metadata={"summarizer": generator, "hhem": hhem, "gpt": gpt},
        )
        for position, (generator, (hhem, gpt)) in enumerate(zip(generators, detectors, strict=True))
    ]
    for user in (alice, bob):
        Assignment.objects.create(batch=second, annotator=user, status=Assignment.Status.SUBMITTED)
    span(t[0], alice, ["Unwanted"])
    span(t[0], bob, ["Unwanted"], 0, 6)
    span(t[1], bob, ["Benign"])
    span(t[2], alice, ["Questionable"])
    span(t[2], bob, ["Questionable"])
    return {"project": project, "batch1": batch, "batch2": second, "s": [s0, s1, s2], "t": t,
            "admin": admin_user, "alice": alice, "bob": bob, "audrey": audrey, "dora": dora}


def run_json(command: str, *args: str) -> Any:
    out = io.StringIO()
    call_command(command, "--project", "demo", *args, "--json", stdout=out)
    return json.loads(out.getvalue())


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
    from annotate.views import agreement as agreement_views

    monkeypatch.setattr(agreement_views, "BATCHES_PER_PAGE", 1)
    client = login(scene["admin"])
    first = tags(client.get("/projects/demo/agreement/?level=nominal"))
    assert [row["data-batch"] for row in first.find("tr") if "data-batch" in row] == [str(scene["batch1"].pk)]
    assert first.one("a", rel="next")["href"] == "/projects/demo/agreement/?scheme=C%2BB%7CQ%2BU%2C+C%2BB%7CQ%7CU%2C+" \
        "C%7CB%7CQ%7CU&level=nominal&aggregate=pooled&bpage=2"
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
        ("level=ratio", "level: unknown level 'ratio'; use one of nominal, ordinal, interval"),
        ("aggregate=median", "aggregate: unknown aggregate 'median'"),
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
    missing = client.get("/projects/demo/disputes/")
    assert missing.status_code == 400 and "batch: which batch?" in missing.content.decode()
    assert client.get("/projects/demo/disputes/?batch=abc").status_code == 400
    bad_round = client.get(f"/projects/demo/disputes/?batch={scene['batch1'].pk}&round=3")
    assert bad_round.status_code == 400 and "no round 3" in bad_round.content.decode()
    bad_scheme = client.get(f"/projects/demo/disputes/?batch={scene['batch1'].pk}&scheme=C|Z", **HTMX)
    assert bad_scheme.status_code == 400 and "unknown category" in bad_scheme.content.decode()
    other = Batch.objects.create(project=Project.objects.create(name="O", slug="o"), name="b")
    assert client.get(f"/projects/demo/disputes/?batch={other.pk}").status_code == 404
    partial = client.get(f"/projects/demo/disputes/?batch={scene['batch2'].pk}", **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="disputes-results">') and "<html" not in partial


# --------------------------------------------------------------------------- results page


def test_results_page_rates_and_ranks_equal_stats(scene: dict[str, Any]) -> None:
    page = tags(login(scene["audrey"]).get("/projects/demo/results/"))
    rates = stats.project_halu_rates(scene["project"], 1)
    ranks = rank_generators(rates)
    for generator, row in rates.items():
        assert int(page.one("tr", data_generator=generator)["data-n"]) == row["n"]
    rate_cells = [cell for cell in page.find("td") if "data-rate" in cell]
    rank_cells = [cell for cell in page.find("td") if "data-rank" in cell]
    order = sorted(rates, key=lambda generator: (rates[generator]["U+Q"], generator))
    expected = [(column, rates[g][column]) for g in order for column in ("U", "U+Q", "U+Q+B")]
    assert [(cell["data-column"], float(cell["data-rate"])) for cell in rate_cells] == expected
    assert [int(cell["data-rank"]) for cell in rank_cells] == [
        ranks[column][g] for g in order for column in ("U", "U+Q", "U+Q+B")
    ]


def test_results_page_chart_is_inline_svg_with_one_bar_per_generator(scene: dict[str, Any]) -> None:
    response = login(scene["admin"]).get("/projects/demo/results/")
    html = response.content.decode()
    page = Tags(html)
    svg = page.one("svg", data_role="worst-label-chart")
    assert svg["role"] == "img" and "worst-chart-title" in svg["aria-labelledby"]
    assert "<title id=\"worst-chart-title\">" in html and "http" not in html.split("<svg", 1)[1].split("xmlns", 1)[0]
    bars = [g for g in page.find("g") if "data-generator" in g]
    generators = sorted(stats.project_halu_rates(scene["project"], 1))
    assert sorted(bar["data-generator"] for bar in bars) == generators
    # model-a: s0 (U), t0 (U), t3 (C) -> U 2, C 1.
    segments = {(rect["data-label"], rect["data-count"]) for rect in page.find("rect") if "data-count" in rect}
    assert ("U", "2") in segments
    assert 'data-role="legend"' in html and "cdn" not in html.lower()


def test_results_page_detector_table_equals_stats_and_follows_the_threshold(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    for threshold in ("0.5", "0.75"):
        page = tags(client.get(f"/projects/demo/results/?threshold={threshold}"))
        report = stats.project_detector_eval(scene["project"], float(threshold), 1)
        assert set(report) == {"hhem", "gpt"}
        html_rows = {row["data-detector"] for row in page.find("tr") if "data-detector" in row}
        assert html_rows == set(report)
    html = client.get("/projects/demo/results/?threshold=0.75").content.decode()
    report = stats.project_detector_eval(scene["project"], 0.75, 1)
    assert f"{report['hhem']['balanced_accuracy']:.2f}" in html and f"{report['hhem']['f1_macro']:.2f}" in html


def test_results_page_challenging_selection_keeps_groups_with_at_least_k(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    page = tags(client.get("/projects/demo/results/?k=2"))
    kept = [row["data-passage"] for row in page.find("tr") if "data-passage" in row]
    passages = [scene["batch1"].samples.first().passage_id, scene["t"][0].passage_id]
    assert kept == [str(pk) for pk in passages]
    assert page.find("form", data_role="create-batches")
    none = tags(client.get("/projects/demo/results/?k=3"))
    assert [row for row in none.find("tr") if "data-passage" in row] == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("threshold=2", "threshold: must be a number between 0 and 1, not '2'"),
        ("threshold=nan", "threshold: must be a number between 0 and 1"),
        ("k=0", "k: must be a whole number at least 1, not '0'"),
        ("round=9", "round: the project has no round 9"),
    ],
)
def test_results_page_rejects_bad_parameters(scene: dict[str, Any], query: str, message: str) -> None:
    for extra in ({}, HTMX):
        response = login(scene["admin"]).get(f"/projects/demo/results/?{query}", **extra)
        assert response.status_code == 400
        assert message in response.content.decode().replace("&#x27;", "'")


def test_results_page_htmx_request_gets_only_the_figures(scene: dict[str, Any]) -> None:
    html = login(scene["admin"]).get("/projects/demo/results/?k=2", **HTMX).content.decode()
    assert html.lstrip().startswith('<div id="results-figures">') and "<html" not in html
    assert 'data-role="worst-label-chart"' in html


def test_a_new_span_changes_the_cached_results(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])  # model-a's t3 becomes U
    page = tags(client.get("/projects/demo/results/"))
    cell = [c for c in page.find("td", data_column="U") if "data-rate" in c]
    rates = stats.project_halu_rates(scene["project"], 1)
    assert rates["model-a"]["U"] == 100.0
    assert 100.0 in [float(c["data-rate"]) for c in cell]


# --------------------------------------------------------------------------- batches from the selection


def test_admin_creates_batches_from_the_selection(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    before = Sample.objects.count()
    response = client.post(
        "/projects/demo/results/selection/",
        {"k": "2", "threshold": "0.5", "name_prefix": "hard", "passages_per_batch": "1"},
    )
    assert response.status_code == 302 and response["Location"] == "/projects/demo/"
    new = list(Batch.objects.filter(project=scene["project"], name__startswith="hard-").order_by("position"))
    assert [batch.name for batch in new] == ["hard-1", "hard-2"]
    assert new[0].position > scene["batch2"].position
    first = list(new[0].samples.order_by("position"))
    originals = list(scene["batch1"].samples.order_by("position"))
    assert [(s.passage_id, s.summary, s.generator, s.metadata, s.external_id) for s in first] == [
        (s.passage_id, s.summary, s.generator, s.metadata, s.external_id) for s in originals
    ]
    assert {s.pk for s in first}.isdisjoint({s.pk for s in originals})
    assert new[1].samples.count() == 4 and Sample.objects.count() == before + 7
    # The originals keep their batch, spans and agreement.
    assert scene["batch1"].samples.count() == 3


def test_creating_batches_is_all_or_nothing_and_admin_only(scene: dict[str, Any]) -> None:
    project = scene["project"]
    passage_ids = [scene["s"][0].passage_id, scene["t"][0].passage_id]
    agreement_admin.create_batches_from_selection(project, passage_ids, "again", passages_per_batch=5)
    assert Batch.objects.filter(project=project, name="again-1").exists()
    count = Sample.objects.count()
    with pytest.raises(agreement_admin.AgreementAdminError, match="name_prefix: batch 'again-1' already exists"):
        agreement_admin.create_batches_from_selection(project, passage_ids, "again")
    with pytest.raises(agreement_admin.AgreementAdminError, match="passage_ids: the selection is empty"):
        agreement_admin.create_batches_from_selection(project, [], "x")
    with pytest.raises(agreement_admin.AgreementAdminError, match="passage_ids: not passages of project 'demo'"):
        agreement_admin.create_batches_from_selection(project, [999_999], "x")
    with pytest.raises(agreement_admin.AgreementAdminError, match="name_prefix"):
        agreement_admin.create_batches_from_selection(project, passage_ids, "  ")
    # Copies already in "again-1" are not copied twice.
    made = agreement_admin.create_batches_from_selection(project, passage_ids, "third")
    assert made[0].samples.count() == 7
    assert Sample.objects.count() == count + 7
    body = {"k": "2", "name_prefix": "nope"}
    assert login(scene["audrey"]).post("/projects/demo/results/selection/", body).status_code == 403
    assert not Batch.objects.filter(name__startswith="nope").exists()
    failed = login(scene["admin"]).post("/projects/demo/results/selection/", {"k": "9", "name_prefix": "nope"})
    assert failed.status_code == 302 and "/results/" in failed["Location"]
    assert not Batch.objects.filter(name__startswith="nope").exists()


# --------------------------------------------------------------------------- API


def test_api_agreement_equals_the_command_json(scene: dict[str, Any]) -> None:
    client = login(scene["audrey"])
    for scheme, level, aggregate, extra in [
        ("C|B|Q|U", "nominal", "pooled", ["--bootstrap", "50"]),
        ("C+B|Q+U", "ordinal", "batch-mean", []),
        ("c + b | q | u", "interval", "pooled", []),
    ]:
        expected = run_json(
            "agreement", "--scheme", scheme, "--level", level, "--aggregate", aggregate, "--round", "1", *extra
        )
        query = {"scheme": scheme, "level": level, "aggregate": aggregate, "round": 1}
        if extra:
            query["bootstrap"] = extra[1]
        response = client.get("/api/projects/demo/agreement/", query)
        assert response.status_code == 200
        assert response.json() == expected


def test_api_rates_and_detectors_equal_the_command_json(scene: dict[str, Any]) -> None:
    client = login(scene["admin"])
    assert client.get("/api/projects/demo/halu-rates/?round=1").json() == run_json("halu_rates")
    assert client.get("/api/projects/demo/detector-eval/?threshold=0.7").json() == run_json(
        "detector_eval", "--threshold", "0.7"
    )


@pytest.mark.parametrize(
    ("url", "field", "message"),
    [
        ("/api/projects/demo/agreement/", "scheme", "This field is required."),
        ("/api/projects/demo/agreement/?scheme=C|K", "scheme", "unknown category 'K'"),
        ("/api/projects/demo/agreement/?scheme=C|U&level=ratio", "level", "not a valid choice"),
        ("/api/projects/demo/agreement/?scheme=C|U&round=4", "round", "has no round 4"),
        ("/api/projects/demo/agreement/?scheme=C|U&aggregate=batch-mean&bootstrap=10", "bootstrap", "pooled"),
        ("/api/projects/demo/halu-rates/?round=x", "round", "valid integer"),
        ("/api/projects/demo/detector-eval/?threshold=1.5", "threshold", "less than or equal to 1"),
        ("/api/projects/demo/detector-eval/?threshold=nan", "threshold", "valid number"),
    ],
)
def test_api_bad_parameters_are_400_naming_the_field(scene: dict[str, Any], url: str, field: str, message: str) -> None:
    response = login(scene["admin"]).get(url)
    assert response.status_code == 400
    assert message in " ".join(response.json()[field])


def test_api_schema_documents_the_results_endpoints(scene: dict[str, Any]) -> None:
    schema = login(scene["admin"]).get("/api/schema/", {"format": "json"}).content.decode()
    for path in ("/api/projects/{slug}/agreement/", "/api/projects/{slug}/halu-rates/",
                 "/api/projects/{slug}/detector-eval/"):
        assert path in schema
    assert "bootstrap_resamples" in schema and "balanced_accuracy" in schema


# --------------------------------------------------------------------------- the figure store: stale while it refreshes


@pytest.fixture
def expensive(settings: Any) -> Any:
    """Treat every figure set as expensive, as at 100,000 samples: stale figures are served, not recomputed."""
    settings.FIGURES_SYNC_MS = 0
    return settings


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The refresh tasks queued (their figure set ids), instead of a broker."""
    from annotate import tasks

    calls: list[int] = []
    monkeypatch.setattr(tasks.refresh_figures, "delay", lambda figure_set_id: calls.append(figure_set_id))
    return calls


def model_a_u_rate(response: Any) -> float:
    page = tags(response)
    generators = [row["data-generator"] for row in page.find("tr") if "data-generator" in row]
    rates = [float(cell["data-rate"]) for cell in page.find("td", data_column="U") if "data-rate" in cell]
    return dict(zip(generators, rates, strict=True))["model-a"]


def test_first_view_computes_the_figures_and_keeps_them_for_every_process(
    scene: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    client = login(scene["admin"])
    first = client.get("/projects/demo/results/")
    assert 'data-role="stale-note"' not in first.content.decode()
    kept = FigureSet.objects.get(project=scene["project"], kind="results")
    assert kept.version == results_cache.data_version(scene["project"])
    assert json.loads(kept.value)["rates"] == stats.project_halu_rates(scene["project"], 1)
    # Another process has an empty local cache but the same table: it serves the kept figures without computing.
    cache.clear()
    monkeypatch.setitem(results_cache.FIGURE_SETS, "results", lambda *args, **kwargs: pytest.fail("recomputed"))
    again = client.get("/projects/demo/results/")
    assert again.status_code == 200 and model_a_u_rate(again) == model_a_u_rate(first)


def test_stale_figures_are_shown_at_once_with_their_age_and_one_refresh_is_queued(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    client = login(scene["admin"])
    before = model_a_u_rate(client.get("/projects/demo/results/"))
    span(scene["t"][3], scene["alice"], ["Unwanted"])  # model-a's t3 becomes U: fresh rate 100
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get("/projects/demo/results/")
        again = client.get("/projects/demo/results/")  # a second viewer while the refresh is pending
    html = stale.content.decode()
    assert stale.status_code == 200 and model_a_u_rate(stale) == before != 100.0
    note = tags(stale).one("p", data_role="stale-note")
    assert note["data-computed-at"]
    assert re.search(r"Computed \d+ seconds? ago — refreshing", html)
    assert 'data-role="stale-poll"' in html
    kept = FigureSet.objects.get(project=scene["project"], kind="results")
    assert queued == [kept.pk]  # queued once, not once per view
    assert kept.refresh_queued_at is not None
    assert model_a_u_rate(again) == before
    # The API and the commands never wait for the refresh: they are fresh already.
    assert client.get("/api/projects/demo/halu-rates/").json()["model-a"]["U"] == 100.0
    assert run_json("halu_rates")["model-a"]["U"] == 100.0


def test_the_refresh_task_recomputes_and_the_page_shows_fresh_figures(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get("/projects/demo/results/")
    shown = FigureSet.objects.get(kind="results").version
    poll = tags(stale).one("span", data_role="stale-poll")["hx-get"].replace("&amp;", "&")
    assert f"shown={shown}" in poll
    assert client.get(poll, **HTMX).status_code == 204  # nothing newer yet: htmx keeps the page as it is
    refresh_figures(queued[0])  # what the worker runs
    kept = FigureSet.objects.get(kind="results")
    assert kept.version == results_cache.data_version(scene["project"]) != shown
    assert kept.refresh_queued_at is None
    assert json.loads(kept.value) == stats.results_figures(scene["project"], 1, 0.5, 7)
    swapped = client.get(poll, **HTMX)
    assert swapped.status_code == 200 and swapped.content.decode().lstrip().startswith('<div id="results-figures">')
    assert model_a_u_rate(swapped) == 100.0 and 'data-role="stale-note"' not in swapped.content.decode()
    refresh_figures(queued[0])  # idempotent: a second delivery finds the figures current
    assert FigureSet.objects.get(kind="results").computed_at == kept.computed_at


def test_a_poll_answered_with_figures_that_are_stale_again_does_not_poll_again(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        poll = tags(client.get("/projects/demo/results/")).one("span", data_role="stale-poll")["hx-get"]
    refresh_figures(queued[0])
    span(scene["t"][1], scene["alice"], ["Unwanted"])  # the campaign goes on
    with django_capture_on_commit_callbacks(execute=True):
        answer = client.get(poll.replace("&amp;", "&"), **HTMX).content.decode()
    assert 'data-role="stale-note"' in answer and 'data-role="stale-poll"' not in answer
    assert "Reload the page" in answer


def test_a_refresh_lock_that_ran_out_is_taken_again(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        client.get("/projects/demo/results/")
    kept = FigureSet.objects.get(kind="results")
    FigureSet.objects.filter(pk=kept.pk).update(
        refresh_queued_at=kept.refresh_queued_at - timedelta(seconds=expensive.FIGURES_REFRESH_LOCK_SECONDS + 1)
    )
    with django_capture_on_commit_callbacks(execute=True):
        client.get("/projects/demo/results/")
    assert queued == [kept.pk, kept.pk]


def test_a_broker_that_is_down_leaves_the_stale_figures_and_releases_the_lock(
    scene: dict[str, Any], expensive: Any, monkeypatch: pytest.MonkeyPatch, django_capture_on_commit_callbacks: Any
) -> None:
    from annotate import tasks

    def down(figure_set_id: int) -> None:
        raise ConnectionError("broker down")

    monkeypatch.setattr(tasks.refresh_figures, "delay", down)
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get("/projects/demo/results/")
    assert response.status_code == 200 and 'data-role="stale-note"' in response.content.decode()
    assert FigureSet.objects.get(kind="results").refresh_queued_at is None


def test_agreement_page_and_span_section_serve_stale_figures_until_refreshed(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    url = "/projects/demo/agreement/?scheme=C|B|Q|U&level=nominal"
    spans_url = url + "&section=spans"

    def cell(response: Any) -> float | None:
        return alpha_of(tags(response).one("td", data_scheme="C|B|Q|U", data_level="nominal", data_round="1"))

    before = cell(client.get(url))
    client.get(spans_url, **HTMX)
    dora = Assignment.objects.get(batch=scene["batch1"], annotator=scene["dora"])
    agreement_admin.set_agreement_exclusion(dora, True)
    expected = stats.project_agreement(scene["project"], "C|B|Q|U", "nominal", "pooled", 1)["alpha"]
    with django_capture_on_commit_callbacks(execute=True):
        stale = client.get(url)
        stale_spans = client.get(spans_url, **HTMX)
    assert same(cell(stale), before) and not same(cell(stale), expected)
    assert 'data-role="stale-note"' in stale.content.decode()
    assert 'data-role="stale-note"' in stale_spans.content.decode()
    assert 'hx-target="#span-agreement"' in stale_spans.content.decode()
    assert sorted(queued) == sorted(FigureSet.objects.filter(project=scene["project"]).values_list("pk", flat=True))
    for figure_set_id in queued:
        refresh_figures(figure_set_id)
    fresh = client.get(url)
    assert same(cell(fresh), expected) and 'data-role="stale-note"' not in fresh.content.decode()
    token = agreement.token_alpha(stats.batch_spans(scene["project"], 1), "C|B|Q|U").alpha
    assert same(alpha_of(tags(client.get(spans_url, **HTMX)).one("tr", data_role="token-alpha")), token)


def test_cheap_figures_are_recomputed_in_the_request_instead_of_shown_stale(
    scene: dict[str, Any], queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    client = login(scene["admin"])
    client.get("/projects/demo/results/")
    span(scene["t"][3], scene["alice"], ["Unwanted"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.get("/projects/demo/results/")
    assert model_a_u_rate(response) == 100.0 and 'data-role="stale-note"' not in response.content.decode()
    assert queued == []


def test_a_refresh_for_a_round_that_is_gone_drops_the_figures(
    scene: dict[str, Any], expensive: Any, queued: list[int], django_capture_on_commit_callbacks: Any
) -> None:
    from annotate.tasks import refresh_figures

    client = login(scene["admin"])
    for user in (scene["alice"], scene["bob"]):
        Assignment.objects.create(batch=scene["batch1"], annotator=user, round=2, status=Assignment.Status.SUBMITTED)
    client.get("/projects/demo/results/?round=2")
    Assignment.objects.filter(round=2).delete()
    kept = FigureSet.objects.get(kind="results", query__round=2)
    refresh_figures(kept.pk)
    assert not FigureSet.objects.filter(pk=kept.pk).exists()
    assert client.get("/projects/demo/results/?round=2").status_code == 400  # the page says the round is unknown


def test_each_project_keeps_only_its_most_recent_page_queries(scene: dict[str, Any], settings: Any) -> None:
    settings.FIGURES_KEPT_PER_PROJECT = 2
    client = login(scene["admin"])
    for k in (1, 2, 3):
        client.get(f"/projects/demo/results/?k={k}")
    assert sorted(query["k"] for query in FigureSet.objects.values_list("query", flat=True)) == [2, 3]


def test_disputes_page_and_batch_creation_use_fresh_numbers(scene: dict[str, Any], expensive: Any) -> None:
    client = login(scene["admin"])
    url = f"/projects/demo/disputes/?batch={scene['batch2'].pk}&round=1"
    client.get(url)
    span(scene["t"][3], scene["alice"], ["Unwanted"])  # t3: alice U, bob C: a new dispute
    page = tags(client.get(url))
    assert str(scene["t"][3].pk) in [row["data-sample"] for row in page.find("tr") if "data-sample" in row]
    assert not FigureSet.objects.exists()
