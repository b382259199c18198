"""Adjudicating by keyboard: the page opens with the focus on its section (Tab reaches the first span's box), the
annotators' spans are marked and numbered in the summary, "Save and next disputed" opens the next sample of the
curation list that needs a gold label, and "Save gold label" returns to the list with the focus on the row just
saved (it used to land at the list's top with the focus nowhere)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import GoldLabel
from annotate.services import spans

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FOCUSED = "() => { const el = document.activeElement; return el && (el.dataset.role || el.getAttribute('name') || el.tagName); }"


def test_a_curator_adjudicates_two_disputed_samples_by_keyboard(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, alice: Any, bob: Any, batch: Any
) -> None:
    first, second, third = batch.samples.order_by("position")
    kept = spans.create_span(first, alice, round=1, start=0, end=11, labels=["Unwanted", "Unwanted.Intrinsic"])
    spans.create_span(first, bob, round=1, start=12, end=25, labels=["Benign"])
    spans.create_span(second, alice, round=1, start=0, end=5, labels=["Questionable"])
    for person in (alice, bob):
        for each in batch.samples.all():
            spans.mark_sample_done(each, person, round=1, done=True)
    log_in(page, admin_user)
    page.goto(live_server.url + reverse("adjudicate", args=[batch.project.slug, first.pk]) + "?round=1")

    assert page.evaluate(FOCUSED) == "adjudication"
    marks = page.locator('[data-role="marked-summary"] mark')
    expect(marks).to_have_count(2)
    expect(marks.first).to_contain_text(first.summary[0:11])
    starts = page.locator('[data-role="marked-summary"] mark[data-starts]')
    assert starts.evaluate_all("(marks) => marks.map((m) => getComputedStyle(m, '::before').content)") == ['"1"', '"2"']
    expect(page.locator('[data-role="marked-summary"]')).to_have_text(first.summary)  # the words, exactly

    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "spans"
    page.keyboard.press("Space")
    page.locator('[data-role="save-next"]').focus()
    page.keyboard.press("Enter")

    page.wait_for_url(f"**/curation/{second.pk}/?round=1")
    expect(page.locator(".messages")).to_contain_text("saved")
    assert page.evaluate(FOCUSED) == "adjudication"
    assert GoldLabel.objects.get(sample=first).spans[0]["from_span"] == kept.pk

    page.keyboard.press("Tab")
    page.keyboard.press("Space")
    page.locator('[data-role="save"]').focus()
    page.keyboard.press("Enter")

    page.wait_for_url(f"**/curation/?round=1&saved={second.pk}")
    link = page.locator(f'tr[data-sample="{second.pk}"] [data-role="gold-link"]')
    expect(link).to_be_focused()
    assert GoldLabel.objects.filter(sample=second).exists()
    assert not GoldLabel.objects.filter(sample=third).exists()
