"""Accessibility rules checked without a browser (the browser checks are in tests/e2e/test_accessibility.py).

- Muted text reaches WCAG AA contrast (4.5:1) on every background it is used on. The colours are read from the CSS
  files (and the agreement page's own styles), so putting back the old grey (#6b7280: 4.27:1 on the read-only banner,
  4.37:1 on a low-alpha cell) fails here.
- Every table.grid sits in a box that scrolls sideways, so a wide table never makes the page scroll (200% zoom).
- A polled progress element is swapped inside a role="status" wrapper that stays on the page: the poll's answer is the
  element alone, never a second wrapper (which would nest a new live region inside the old one at every poll).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

from annotate.models import Job, Project
from judging.models import Judge, JudgeRun, SyntheticSet

BASE = Path(settings.BASE_DIR)
APP_CSS = BASE / "static" / "css" / "app.css"
ANNOTATE_CSS = BASE / "static" / "annotate" / "annotate.css"
AGREEMENT = BASE / "templates" / "annotate" / "agreement.html"
TEMPLATES = BASE / "templates"
AA_NORMAL_TEXT = 4.5
HTMX = {"HTTP_HX_REQUEST": "true"}


# --- contrast ------------------------------------------------------------------------------------------------------


def relative_luminance(hex_colour: str) -> float:
    """WCAG 2.x relative luminance of an sRGB colour written #rgb or #rrggbb."""
    digits = hex_colour.lstrip("#")
    if len(digits) == 3:
        digits = "".join(digit * 2 for digit in digits)
    if not re.fullmatch(r"[0-9a-fA-F]{6}", digits):
        raise ValueError(f"{hex_colour!r} is not a #rgb or #rrggbb colour")
    channels = [int(digits[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(foreground: str, background: str) -> float:
    """(L1 + 0.05) / (L2 + 0.05), the lighter colour's luminance over the darker's."""
    lighter, darker = sorted((relative_luminance(foreground), relative_luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def css_text(path: Path) -> str:
    """A stylesheet's text, or a template's <style> blocks, without comments."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        text = "\n".join(re.findall(r"<style>(.*?)</style>", text, re.S))
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def declaration(path: Path, selector: str, prop: str) -> str:
    """The last value of ``prop`` in the rules of ``path`` whose selector list names ``selector`` exactly."""
    found = None
    for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css_text(path)):
        if selector not in [part.strip() for part in selectors.split(",")]:
            continue
        for name, value in re.findall(r"([-\w]+)\s*:\s*([^;]+)", body):
            if name.strip() == prop:
                found = value.strip()
    if found is None:
        raise AssertionError(f"{path.relative_to(BASE)}: no {prop} in a rule for {selector}")
    return found


def colour(path: Path, selector: str, prop: str) -> str:
    """The colour ``prop`` gives ``selector``, with var(--name) looked up in app.css's :root."""
    value = declaration(path, selector, prop)
    variable = re.fullmatch(r"var\((--[\w-]+)\)", value)
    if variable:
        value = declaration(APP_CSS, ":root", variable.group(1))
    if not re.fullmatch(r"#[0-9a-fA-F]{3}|#[0-9a-fA-F]{6}", value):
        raise AssertionError(f"{path.relative_to(BASE)}: {selector} {prop} is {value!r}, not one #hex colour")
    return value


MUTED = (APP_CSS, ".muted", "color")
# Where muted text is used: (what, the text's colour, the background's colour), each as (file, selector, property).
MUTED_TEXT_ON = [
    ("muted text on the page", MUTED, (APP_CSS, "body", "background")),
    ("muted text on a card", MUTED, (APP_CSS, ".card", "background")),
    ("muted text in a table", MUTED, (APP_CSS, "table.grid", "background")),
    ("muted text in a low-alpha agreement cell", MUTED, (AGREEMENT, ".alpha-low", "background")),
    ("an excluded annotator on the agreement page", (AGREEMENT, ".person.excluded", "color"),
     (APP_CSS, ".card", "background")),
    ("the read-only banner of the span page", (ANNOTATE_CSS, ".readonly-banner", "color"),
     (ANNOTATE_CSS, ".readonly-banner", "background")),
]


def test_the_contrast_formula_gives_wcag_s_reference_values() -> None:
    assert contrast_ratio("#000", "#fff") == pytest.approx(21)
    assert contrast_ratio("#fff", "#fff") == pytest.approx(1)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)  # the classic just-too-light grey
    assert contrast_ratio("#6b7280", "#eef1f6") == pytest.approx(4.27, abs=0.01)  # what the review's axe measured


@pytest.mark.parametrize(("what", "text", "background"), MUTED_TEXT_ON, ids=[row[0] for row in MUTED_TEXT_ON])
def test_muted_text_reaches_aa_contrast_on_each_background_it_is_used_on(
    what: str, text: tuple[Path, str, str], background: tuple[Path, str, str]
) -> None:
    foreground, behind = colour(*text), colour(*background)
    ratio = contrast_ratio(foreground, behind)
    assert ratio >= AA_NORMAL_TEXT, f"{what}: {foreground} on {behind} is {ratio:.2f}:1, under {AA_NORMAL_TEXT}:1"


# --- wide tables ---------------------------------------------------------------------------------------------------


def test_every_grid_table_sits_in_a_box_that_scrolls_sideways() -> None:
    assert re.search(r"\.table-scroll\s*\{[^}]*overflow-x:\s*auto", css_text(APP_CSS)), "app.css: no .table-scroll"
    bare = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r'<table class="grid\b', text):
            before = text[:match.start()].rstrip()
            if not before.endswith(('<div class="table-scroll">', '<div class="scroll">')):
                bare.append(f"{path.relative_to(TEMPLATES)}:{text.count(chr(10), 0, match.start()) + 1}")
    assert bare == [], f'wrap these tables in <div class="table-scroll">: {bare}'


# --- progress in a live region -------------------------------------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Parents(HTMLParser):
    """Each element with an id, with its parent's attributes (what a swap inside a live region depends on)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.stack: list[dict[str, str]] = [{}]
        self.parent_of: dict[str, dict[str, str]] = {}
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = {name: value or "" for name, value in attrs}
        if "id" in element:
            self.parent_of[element["id"]] = self.stack[-1]
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        if tag not in VOID and len(self.stack) > 1:
            self.stack.pop()


def running_job(project: Project) -> tuple[str, str, str]:
    job = Job.objects.create(project=project, kind=Job.Kind.EMBED, status=Job.Status.RUNNING, total=4)
    return reverse("project", args=[project.slug]), reverse("job", args=[project.slug, job.pk]), f"job-{job.pk}"


def running_run(project: Project) -> tuple[str, str, str]:
    judge = Judge.objects.create(project=project, name="llm", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="m")
    run = JudgeRun.objects.create(project=project, judge=judge, status=JudgeRun.Status.RUNNING, total=4)
    url = reverse("judging-run", args=[project.slug, run.pk])
    return url, url, f"run-{run.pk}"


def running_set(project: Project) -> tuple[str, str, str]:
    judge = Judge.objects.create(project=project, name="writer", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="m")
    synthetic = SyntheticSet.objects.create(project=project, name="rewrites", writer=judge,
                                            status=SyntheticSet.Status.RUNNING, total=4)
    url = reverse("judging-synthetic-set", args=[project.slug, synthetic.pk])
    return url, url, f"synthetic-{synthetic.pk}"


@pytest.mark.django_db
@pytest.mark.parametrize("make", [running_job, running_run, running_set], ids=["job", "judge run", "synthetic set"])
def test_the_page_wraps_polled_progress_in_a_status_region_and_the_poll_answers_with_the_element_alone(
    client_for: Any, admin_user: Any, project: Project, make: Any
) -> None:
    page_url, poll_url, element_id = make(project)
    client: Client = client_for(admin_user)

    on_page = Parents(client.get(page_url).content.decode()).parent_of
    wrapper = on_page[element_id]
    assert (wrapper.get("id"), wrapper.get("role"), wrapper.get("hx-preserve")) == (f"{element_id}-live", "status",
                                                                                     "true")
    assert on_page[f"{element_id}-live"].get("role") != "status"  # one region, not one inside another

    response = client.get(poll_url, **HTMX)
    assert response.status_code == 200
    answer = Parents(response.content.decode()).parent_of
    assert answer[element_id] == {}, "the poll's answer should be the progress element itself, at the top"
    assert f"{element_id}-live" not in answer
    assert 'role="status"' not in response.content.decode()


@pytest.mark.django_db
def test_the_judges_page_list_rows_get_no_region_of_their_own(
    client_for: Any, admin_user: Any, project: Project
) -> None:
    """The runs list swaps itself whole every second: a region per row would be a new one at every poll."""
    _, _, element_id = running_run(project)
    on_page = Parents(client_for(admin_user).get(reverse("judging-judges", args=[project.slug])).content.decode())
    assert f"{element_id}-live" not in on_page.parent_of
    assert on_page.parent_of[element_id].get("id") == "runs"
