"""WCAG 2.2 AA findings of the accessibility review, checked where only a browser shows them: the import forms' file
inputs have a visible label, a skip link is the first Tab stop, wide tables scroll in their own box at 200% zoom
(a 640 px window) instead of the page, small click targets are at least 24 px tall, progress that polls keeps one
live region in place, and flash messages reach a live region once the page has loaded.

The colour contrast of muted text is a unit test (tests/test_accessibility_rules.py), over the CSS files' values."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import Batch, Job, Project
from annotate.services.demo import DEMO_PASSWORD, DEMO_PROJECT_SLUG, load_demo_data
from annotate.services.pairs.demo import DEMO_PAIRS_SLUG
from judging.models import Judge, JudgeRun, SyntheticSet
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

pairs_project = pairs_fixtures.pairs_project

ZOOMED = {"width": 640, "height": 400}  # a 1280 px wide window at 200% zoom
# The page's own sideways scroll, and the tables' boxes that scroll because their table is wider than the window.
WIDTHS = """() => ({
  page: document.scrollingElement.scrollWidth,
  window: document.scrollingElement.clientWidth,
  scrollingTables: [...document.querySelectorAll('.table-scroll')]
    .filter((box) => box.scrollWidth > box.clientWidth + 1).length,
})"""


def log_in_as(page: Page, live_server: Any, username: str, password: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


@pytest.fixture
def demo() -> Project:
    """The demo data (`make run`'s): its tables are as wide as the ones the review saw."""
    return load_demo_data()


# --- 1. the import forms' file input -------------------------------------------------------------------------------


@pytest.mark.parametrize("which", ["annotation", "pairs"])
def test_the_import_file_input_is_named_by_a_visible_label(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, pairs_project: Project, which: str
) -> None:
    target, name = (project, "Data files (.json, .jsonl, or a .zip of them)") if which == "annotation" else (
        pairs_project, "Data files (.jsonl, .json)")
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[target.slug]))
    files = page.get_by_label(name, exact=True)
    expect(files).to_have_attribute("name", "files")
    expect(files).to_have_attribute("type", "file")
    expect(page.locator("label[for='import-files']")).to_be_visible()


# --- 3. the skip link ----------------------------------------------------------------------------------------------


def test_the_first_tab_shows_the_skip_link_and_enter_moves_the_focus_to_main(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[project.slug]))
    skip = page.locator("[data-role='skip-link']")
    expect(skip).not_to_be_in_viewport()  # hidden until it has the focus

    page.keyboard.press("Tab")

    expect(skip).to_be_focused()
    expect(skip).to_have_text("Skip to content")
    expect(skip).to_be_in_viewport(ratio=1)

    page.keyboard.press("Enter")

    expect(page.locator("main#content")).to_be_focused()
    assert page.url.endswith("#content")
    page.keyboard.press("Tab")  # on from main: its first link, not the top bar's
    assert page.evaluate("() => document.querySelector('main').contains(document.activeElement)")


# --- 4. wide tables at 200% zoom -----------------------------------------------------------------------------------


def test_wide_tables_scroll_in_their_own_box_and_the_pages_do_not_scroll_sideways_at_640_px(
    page: Page, live_server: Any, demo: Project
) -> None:
    batch = Batch.objects.filter(project=demo).order_by("pk").first()
    synthetic = SyntheticSet.objects.filter(project=demo).order_by("pk").first()
    run = JudgeRun.objects.filter(project=demo).order_by("pk").first()
    assert batch and synthetic and run, "the demo data should hold a batch, a synthetic set and a judge run"
    pages = {
        "pairs project": reverse("project", args=[DEMO_PAIRS_SLUG]),
        "pairs round wizard": reverse("pairs-round-new", args=[DEMO_PAIRS_SLUG]),
        "pairs round": reverse("pairs-round", args=[DEMO_PAIRS_SLUG, 1]),
        "project": reverse("project", args=[DEMO_PROJECT_SLUG]),
        "labels editor": reverse("label-set", args=[DEMO_PROJECT_SLUG]),
        "agreement": reverse("agreement", args=[DEMO_PROJECT_SLUG]),
        "results": reverse("results", args=[DEMO_PROJECT_SLUG]),
        "sample browser": reverse("batch-samples", args=[DEMO_PROJECT_SLUG, batch.pk]),
        "flags": reverse("flags", args=[DEMO_PROJECT_SLUG]),
        "judges": reverse("judging-judges", args=[DEMO_PROJECT_SLUG]),
        "judge run": reverse("judging-run", args=[DEMO_PROJECT_SLUG, run.pk]),
        "synthetic sets": reverse("judging-synthetic", args=[DEMO_PROJECT_SLUG]),
        "synthetic set": reverse("judging-synthetic-set", args=[DEMO_PROJECT_SLUG, synthetic.pk]),
    }
    page.set_viewport_size(ZOOMED)
    log_in_as(page, live_server, "admin", DEMO_PASSWORD)
    sideways, with_wide_tables = {}, set()
    for name, url in pages.items():
        page.goto(live_server.url + url)
        expect(page.locator("main h1")).to_be_visible()
        widths = page.evaluate(WIDTHS)
        if widths["page"] > widths["window"]:
            sideways[name] = widths["page"]
        if widths["scrollingTables"]:
            with_wide_tables.add(name)
    assert sideways == {}, f"these pages scroll sideways in a {ZOOMED['width']} px window: {sideways}"
    # The check means something: these pages' tables are far wider than the window (scrolling in their own box).
    wide = {"pairs project", "labels editor", "judges", "sample browser"}
    assert wide <= with_wide_tables, f"tables scroll in their box only on {sorted(with_wide_tables)}"


# --- 5. click targets ----------------------------------------------------------------------------------------------


def heights(page: Page, selector: str) -> list[float]:
    return page.locator(selector).evaluate_all("(els) => els.map((e) => e.getBoundingClientRect().height)")


def test_project_links_and_summary_toggles_are_at_least_24_px_tall(
    page: Page, live_server: Any, demo: Project
) -> None:
    synthetic = SyntheticSet.objects.filter(project=demo).order_by("pk").first()
    log_in_as(page, live_server, "admin", DEMO_PASSWORD)
    targets = {
        "home page's project links": (reverse("home"), "[data-role='project-links'] a"),
        "judges page's toggles": (reverse("judging-judges", args=[DEMO_PROJECT_SLUG]), "main summary"),
        "synthetic set's toggles": (reverse("judging-synthetic-set", args=[DEMO_PROJECT_SLUG, synthetic.pk]),
                                    "main summary"),
    }
    for name, (url, selector) in targets.items():
        page.goto(live_server.url + url)
        found = [height for height in heights(page, selector) if height > 0]  # a closed <details> hides its inner ones
        assert found, f"{name}: nothing matches {selector}"
        assert min(found) >= 24, f"{name}: heights {found}"


# --- 6. progress in a live region ----------------------------------------------------------------------------------


def a_running_job(project: Project) -> tuple[str, str, Any]:
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.RUNNING, total=10, done=2)
    return reverse("project", args=[project.slug]), f"job-{job.pk}", Job.objects.filter(pk=job.pk)


def a_running_judge_run(project: Project) -> tuple[str, str, Any]:
    judge = Judge.objects.create(project=project, name="local-llm", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="test-model")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.RUNNING, total=10, done=2)
    return reverse("judging-run", args=[project.slug, run.pk]), f"run-{run.pk}", JudgeRun.objects.filter(pk=run.pk)


def a_running_synthetic_set(project: Project) -> tuple[str, str, Any]:
    judge = Judge.objects.create(project=project, name="writer", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="test-model")
    synthetic = SyntheticSet.objects.create(project=project, name="rewrites", writer=judge,
                                            status=SyntheticSet.Status.RUNNING, total=10, done=2)
    return (reverse("judging-synthetic-set", args=[project.slug, synthetic.pk]), f"synthetic-{synthetic.pk}",
            SyntheticSet.objects.filter(pk=synthetic.pk))


def counted(done: int) -> re.Pattern[str]:
    """The progress text for ``done`` of the 10 steps: "7 of 10 texts" (a job) or "7 / 10" (a run, a set)."""
    return re.compile(rf"\b{done} (of|/) 10\b")


@pytest.mark.parametrize("make", [a_running_job, a_running_judge_run, a_running_synthetic_set],
                         ids=["job on the project page", "judge run", "synthetic set"])
def test_polled_progress_changes_inside_one_live_region_that_stays_in_place(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, make: Any
) -> None:
    url, element_id, rows = make(project)
    log_in(page, admin_user)
    page.goto(live_server.url + url)
    region = page.locator(f"#{element_id}-live")
    progress = page.locator(f"#{element_id}")
    expect(region).to_have_attribute("role", "status")
    expect(region.locator(f"#{element_id}")).to_have_count(1)
    expect(progress).to_contain_text(counted(2))
    region.evaluate("(e) => { e.dataset.sameNode = 'yes'; }")  # gone if the region itself is swapped

    # On the project page the section around the job polls too (every 3 s) and swaps itself: wait for one such swap.
    if element_id.startswith("job-"):
        with page.expect_response(lambda r: r.url == live_server.url + url and r.request.headers.get("hx-request")):
            pass
        page.wait_for_timeout(300)  # let htmx swap the section in
    rows.update(done=7)
    expect(progress).to_contain_text(counted(7))
    rows.update(done=10, status="done")
    expect(progress.locator("progress")).to_have_attribute("value", "100")
    assert progress.get_attribute("hx-get") is None  # done: the poll stopped

    expect(page.locator(f"#{element_id}-live")).to_have_count(1)
    expect(region).to_have_attribute("data-same-node", "yes")
    expect(region.locator(f"#{element_id}")).to_have_count(1)  # swapped inside the region, not around it
    expect(region).to_contain_text(counted(10))


# --- 7. flash messages ---------------------------------------------------------------------------------------------


def test_a_success_message_reaches_the_polite_live_region_after_load(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[project.slug]))
    page.locator("#project-settings button").click()
    shown = page.locator("[data-role='messages'] li")
    expect(shown).to_have_text("Settings saved.")
    expect(page.locator("[data-role='flash-live']")).to_have_text("Settings saved.")
    expect(page.locator("[data-role='flash-live']")).to_have_attribute("role", "status")
    expect(page.locator("[data-role='flash-alert']")).to_have_text("")
    expect(shown).to_be_visible()  # still shown as before


def test_an_error_message_reaches_the_alert_region_after_load(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project
) -> None:
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("project", args=[project.slug]))
    page.set_input_files("#import-files", files=[
        {"name": "broken.jsonl", "mimeType": "application/json", "buffer": b"this is not JSON\n"},
    ])
    page.click("form[action$='/import/'] button")
    error = page.locator("[data-role='messages'] li.error").first
    expect(error).to_contain_text("broken.jsonl")
    alert = page.locator("[data-role='flash-alert']")
    expect(alert).to_have_attribute("role", "alert")
    expect(alert).to_contain_text(error.inner_text().strip())
    expect(error).to_be_visible()
