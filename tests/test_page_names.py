"""Pages of all three workflows name themselves the same way: breadcrumbs in sentence case ("Curation", not
"curation"; data names such as a batch's stay as they are), and a link, the page it opens, its title, heading and
breadcrumb use one name ("Synthetic sets", "Audit queue", "Label pairs"). On the demo data (manage.py load_demo).

Not listed: the pairs round wizard, whose template another change owns for now.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, PairRound
from judging.models import Judge, JudgeRun, SyntheticSet
from tests.judging.audit_helpers import Element, read_html
from tests.roles.expectations import ANNOTATOR, SUPERUSER
from tests.roles.world import World, load_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(tmp_path: Any, settings: Any) -> World:
    settings.DATA_DIR = tmp_path
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    return load_world(tmp_path)


def page_of(client: Client, url: str) -> Element:
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return read_html(response.content)


def trail(page: Element) -> list[str]:
    """The breadcrumb's parts after the brand: ["Demo", "Judges", "Run 3"]."""
    crumbs = [element for element in page.find() if "crumb" in element.attrs.get("class", "").split()]
    assert len(crumbs) == 1, f"expected one breadcrumb, found {len(crumbs)}"
    return [part.strip() for part in " ".join(crumbs[0].text.split()).split("/") if part.strip()]


def title(page: Element) -> str:
    """The document's title, the head's first (an SVG chart's <title> elements come later)."""
    return page.find("title")[0].text.split(" · ")[0].strip()


def headings(page: Element) -> list[str]:
    return [" ".join(h1.text.split()) for h1 in page.find("h1")]


def expected_trails(world: World) -> list[tuple[str, Client, str, list[str]]]:
    spans, pairs = world.projects["spans"], world.projects["pairs"]
    admin, annotator = world.client(SUPERUSER), world.client(ANNOTATOR)
    batch = Batch.objects.get(pk=world.values["spans"]["batch"])
    judge = Judge.objects.get(pk=world.values["spans"]["judge"])
    run = JudgeRun.objects.get(pk=world.values["spans"]["run"])
    synthetic = SyntheticSet.objects.get(pk=world.values["spans"]["synthetic"])
    sample = world.sample
    pair_round = PairRound.objects.get(project=pairs, number=world.values["pairs"]["round"])
    s, p = spans.slug, pairs.slug
    return [
        ("new project", admin, reverse("project-create"), ["New project"]),
        ("guidelines", admin, reverse("guidelines", args=[s]), [spans.name, "Guidelines"]),
        ("curation", admin, reverse("curation", args=[s]), [spans.name, "Curation"]),
        ("labels", admin, reverse("label-set", args=[s]), [spans.name, "Labels and guidelines"]),
        ("adjudicate", admin, reverse("adjudicate", args=[s, sample.pk]) + "?round=1",
         [spans.name, "Curation", f"Gold label for sample {sample.external_id}"]),
        ("flags", admin, reverse("flags", args=[s]), [spans.name, "Flagged samples"]),
        ("disputes", admin, reverse("disputes", args=[s]) + f"?batch={batch.pk}",
         [spans.name, "Agreement", f"Samples in dispute: {batch.name}"]),
        ("batch samples", admin, reverse("batch-samples", args=[s, batch.pk]), [spans.name, batch.name, "Samples"]),
        ("batch annotators", admin, reverse("batch-annotators", args=[s, batch.pk]),
         [spans.name, batch.name, "Annotators"]),
        ("sample", annotator, reverse("sample", args=[s, sample.pk]) + "?round=1",
         [spans.name, sample.batch.name, "Round 1"]),
        ("results", admin, reverse("results", args=[s]), [spans.name, "Results"]),
        ("agreement", admin, reverse("agreement", args=[s]), [spans.name, "Agreement"]),
        ("members", admin, reverse("project-members", args=[s]), [spans.name, "Members"]),
        ("judges", admin, reverse("judging-judges", args=[s]), [spans.name, "Judges"]),
        ("rubric", admin, reverse("judging-prompt", args=[s, "rubric"]), [spans.name, "Judges", "Rubric (judge system prompt)"]),
        ("run", admin, reverse("judging-run", args=[s, run.pk]), [spans.name, "Judges", f"Run {run.pk}"]),
        ("people", admin, reverse("judging-people", args=[s, judge.pk]),
         [spans.name, "Judges", f"{judge.name} against the auditors"]),
        ("synthetic sets", admin, reverse("judging-synthetic", args=[s]), [spans.name, "Judges", "Synthetic sets"]),
        ("synthetic set", admin, reverse("judging-synthetic-set", args=[s, synthetic.pk]),
         [spans.name, "Judges", "Synthetic sets", synthetic.name]),
        ("audit", admin, reverse("judging-audit", args=[s]), [spans.name, "Audit queue"]),
        ("pair round", admin, reverse("pairs-round", args=[p, pair_round.number]),
         [pairs.name, f"Round {pair_round.number}"]),
        ("pair round job", admin, reverse("pairs-round-job", args=[p, world.values["pairs"]["round_job"]]),
         [pairs.name, "New round"]),
        ("pairs guidelines", admin, reverse("guidelines", args=[p]), [pairs.name, "Guidelines"]),
        ("pairs guidelines editor", admin, reverse("label-set", args=[p]), [pairs.name, "Edit guidelines"]),
        ("spammer flags", admin, reverse("pairs-flags", args=[p]), [pairs.name, "Spammer flags"]),
        ("label pairs", admin, reverse("pairs-label", args=[p]), [pairs.name, "Label pairs"]),
    ]


def test_every_breadcrumb_is_in_sentence_case(world: World) -> None:
    wrong = []
    for name, client, url, expected in expected_trails(world):
        found = trail(page_of(client, url))
        if found != expected:
            wrong.append(f"{name} ({url}): {found}, expected {expected}")
    assert not wrong, "\n".join(wrong)


def link_named(page: Element, role: str) -> tuple[str, str]:
    link = page.one("a", data_role=role)
    return " ".join(link.text.split()), link.attrs["href"]


@pytest.mark.parametrize("role", ["synthetic-link", "audit-link"])
def test_a_judging_link_and_the_page_it_opens_use_one_name(world: World, role: str) -> None:
    admin = world.client(SUPERUSER)
    name, href = link_named(page_of(admin, reverse("project", args=[world.projects["spans"].slug])), role)
    opened = page_of(admin, href)
    assert title(opened) == name
    assert name in headings(opened)
    assert trail(opened)[-1] == name


def test_the_pairs_labeling_link_says_label_pairs_as_home_and_the_page_do(world: World) -> None:
    admin = world.client(SUPERUSER)
    pairs = world.projects["pairs"]
    name, href = link_named(page_of(admin, reverse("project", args=[pairs.slug])), "label-link")
    home = page_of(admin, reverse("home"))
    assert {" ".join(link.text.split()) for link in home.find("a", data_role="next-pair")} == {name}
    opened = page_of(admin, href)
    assert name == "Label pairs"
    assert title(opened) == name and headings(opened) == [name] and trail(opened)[-1] == name


# Pages whose title, heading and breadcrumb disagreed ("Adjudicate", "Sample 1", "Gold label for sample 1").
# The batch pages are left out: their title "Annotators of demo-batch-1" is their breadcrumb's last two parts.
ONE_NAME = ["labels", "adjudicate", "flags", "disputes", "people", "synthetic set", "pairs guidelines",
            "pairs guidelines editor"]


def test_a_batchs_annotators_page_is_named_as_its_samples_page_is(world: World) -> None:
    _, client, url, expected = next(row for row in expected_trails(world) if row[0] == "batch annotators")
    page = page_of(client, url)
    batch_name = expected[-2]
    assert (title(page), headings(page)) == (f"Annotators of {batch_name}", [f"Annotators of {batch_name}"])


@pytest.mark.parametrize("name", ONE_NAME)
def test_a_pages_title_heading_and_last_breadcrumb_are_one_name(world: World, name: str) -> None:
    _, client, url, expected = next(row for row in expected_trails(world) if row[0] == name)
    page = page_of(client, url)
    assert (title(page), headings(page), trail(page)[-1]) == (expected[-1], [expected[-1]], expected[-1])


LINKS = [
    # (the page holding the link, the link's data-role, its text)
    ("curation", "gold-link", "Gold label"),
    ("project", "flags", "Flagged samples"),
    ("judges", "people-link", "against the auditors"),
]


@pytest.mark.parametrize(("holder", "role", "text"), LINKS)
def test_links_name_the_page_they_open(world: World, holder: str, role: str, text: str) -> None:
    """A row's link may leave out what its row already says (the sample, the judge): the rest is the page's name."""
    rows = {row[0]: row for row in expected_trails(world)}
    admin = world.client(SUPERUSER)
    holder_url = rows[holder][2] if holder in rows else reverse(holder, args=[world.projects["spans"].slug])
    # One link per row: the first stands for the rest.
    link = page_of(admin, holder_url).find("a", data_role=role)[0]
    name, href = " ".join(link.text.split()), link.attrs["href"]
    assert name == text
    target = page_of(admin, href)
    assert title(target).endswith(text) or title(target).startswith(text), (title(target), text)
    assert trail(target)[-1] == title(target)


def test_the_pairs_guidelines_and_their_editor_are_two_pages_with_two_names(world: World) -> None:
    """Members read /guidelines/ (the text judges see, or the default); admins edit it on /labels/."""
    pairs = world.projects["pairs"]
    admin, annotator = world.client(SUPERUSER), world.client(ANNOTATOR)
    read = page_of(annotator, reverse("guidelines", args=[pairs.slug]))
    assert title(read) == "Guidelines"
    assert read.find(data_role="guidelines-text") and not read.find(data_role="labels")
    name, href = link_named(page_of(admin, reverse("project", args=[pairs.slug])), "guidelines-link")
    assert (name, href) == ("Edit guidelines", reverse("label-set", args=[pairs.slug]))
    assert title(page_of(admin, href)) == "Edit guidelines"
