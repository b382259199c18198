"""In a real browser, Start run, Start triage and Open round 2 ask first, with the browser's own dialog, as removing
a member does: the question counts the samples chosen now, Escape (dismiss) starts nothing, the keyboard reaches it,
and a refused form asks again once fixed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Dialog, Page, expect

from annotate.models import Assignment, Batch, Project
from annotate.services import spans
from judging.models import Judge, JudgeRun
from judging.services.judges import update_judging_settings
from tests.judging.run_factories import add_samples

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def no_leftover_tasks() -> Iterator[None]:
    """Starting a run queues its task on the broker; no worker runs here, so take it off afterwards."""
    yield
    from config.celery import app

    app.control.purge()


class Dialogs:
    """The dialogs a page opened, answered as told (dismissed unless accept is set)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.seen: list[tuple[str, str]] = []
        self.accept = False
        page.on("dialog", self._answer)

    def wait(self, count: int) -> list[tuple[str, str]]:
        """The dialogs seen, once there are `count` (Playwright answers them while the page is waited on)."""
        for _ in range(100):
            if len(self.seen) >= count:
                break
            self.page.wait_for_timeout(50)
        self.page.wait_for_timeout(200)  # and no more than that: a second dialog would show here
        assert len(self.seen) == count, self.seen
        return self.seen

    def _answer(self, dialog: Dialog) -> None:
        self.seen.append((dialog.type, dialog.message))
        if self.accept:
            dialog.accept()
        else:
            dialog.dismiss()


@pytest.fixture
def judge(project: Project) -> Judge:
    return Judge.objects.create(project=project, name="gpt", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                model="gpt-test", max_retries=2, price_input_per_mtok=2.5, price_output_per_mtok=10)


def test_start_run_asks_with_the_chosen_count_and_starts_only_when_confirmed(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, batch: Batch, judge: Judge,
    no_leftover_tasks: None,
) -> None:
    more = add_samples(project, 12, batch_name="more")[0].batch
    log_in(page, admin_user)
    dialogs = Dialogs(page)
    page.goto(live_server.url + reverse("judging-judges", args=[project.slug]))
    form = page.locator("form[data-role='start-run']")
    form.locator("select[name='judge']").select_option(str(judge.pk))
    form.locator("button").click()
    kind, asked = dialogs.wait(1)[0]
    assert kind == "confirm"
    assert asked.startswith("Start a run of gpt over 15 samples? gpt sends at most 15 calls to gpt-test at "
                            "http://127.0.0.1:9/v1, one per sample")
    assert "retried up to 2 times" in asked and "answered from the cache and not paid again" in asked
    assert "$2.50 in, $10.00 out per million tokens" in asked
    assert not JudgeRun.objects.exists()  # dismissed: nothing started

    # One batch: the question follows the choice. From the keyboard: Enter on the focused button asks too.
    form.locator("select[name='scope']").select_option("batch")
    form.locator("select[name='batch']").select_option(str(more.pk))
    form.locator("button").focus()
    page.keyboard.press("Enter")
    assert "over 12 samples? gpt sends at most 12 calls" in dialogs.wait(2)[1][1]
    assert not JudgeRun.objects.exists()

    dialogs.accept = True
    form.locator("button").click()
    expect(page.locator(".messages")).to_contain_text("queued")
    run = JudgeRun.objects.get()
    assert (run.scope, run.batch_id, run.total) == ("batch", more.pk, 12)


def test_a_form_that_would_be_refused_asks_nothing_and_asks_again_once_fixed(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, batch: Batch, judge: Judge,
    no_leftover_tasks: None,
) -> None:
    log_in(page, admin_user)
    dialogs = Dialogs(page)
    page.goto(live_server.url + reverse("judging-judges", args=[project.slug]))
    form = page.locator("form[data-role='start-run']")
    form.locator("select[name='judge']").select_option(str(judge.pk))
    form.locator("select[name='scope']").select_option("batch")  # and no batch chosen
    form.locator("button").click()
    expect(page.locator("#start-run [data-error-for='batch']")).to_contain_text("Choose the batch to judge")
    assert dialogs.seen == [] and not JudgeRun.objects.exists()
    page.locator("#start-run select[name='batch']").select_option(str(batch.pk))
    page.locator("#start-run button").click()
    assert "over 3 samples?" in dialogs.wait(1)[0][1]
    assert not JudgeRun.objects.exists()


def test_start_triage_asks_first(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, batch: Batch, judge: Judge,
    no_leftover_tasks: None,
) -> None:
    update_judging_settings(project, first_pass=judge)
    log_in(page, admin_user)
    dialogs = Dialogs(page)
    page.goto(live_server.url + reverse("judging-judges", args=[project.slug]))
    page.locator("form[data-role='start-triage'] button").click()
    assert dialogs.wait(1)[0][1].startswith("Start triage over 3 samples? First pass: gpt sends at most 3 calls")
    assert not JudgeRun.objects.exists()
    dialogs.accept = True
    page.locator("form[data-role='start-triage'] button").click()
    expect(page.locator(".messages")).to_contain_text("Triage started")
    assert JudgeRun.objects.get().purpose == JudgeRun.Purpose.FIRST_PASS


def test_open_round_two_asks_like_removing_a_member_and_opens_only_when_confirmed(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, project: Project, batch: Batch, alice: Any,
    bob: Any,
) -> None:
    for person in (alice, bob):
        for sample in batch.samples.all():
            spans.mark_sample_done(sample, person, round=1, done=True)
    log_in(page, admin_user)
    dialogs = Dialogs(page)
    page.goto(live_server.url + reverse("project-members", args=[project.slug]))
    page.locator("[data-role='remove-member']").first.click()
    assert [kind for kind, _ in dialogs.wait(1)] == ["confirm"]  # how the app asked before: the browser's dialog

    page.goto(live_server.url + reverse("project", args=[project.slug]))
    page.locator("[data-role='open-round-two']").click()
    kind, asked = dialogs.wait(2)[1]
    assert kind == "confirm" and asked.startswith("Open round 2 of batch-1? Round 1 of this batch then freezes")
    assert "can never be re-opened" in asked
    assert not Assignment.objects.filter(batch=batch, round=2).exists()
    dialogs.accept = True
    page.locator("[data-role='open-round-two']").click()
    expect(page.locator(".messages")).to_contain_text("Round 2 is open for batch-1")
    assert Assignment.objects.filter(batch=batch, round=2).count() == 2
