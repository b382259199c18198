"""The pair labeling page in a real browser: keys save and show the next item, undo, the highlighted
span in both texts at the right code points (an emoji comes before it), other spans faint, the end
state, 409s in words, and keys that stay quiet while typing."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import Page, expect

from annotate.models import (
    BlockedJudge,
    PairConfig,
    PairItem,
    PairJudgement,
    PairOriginal,
    PairRound,
    PerturbedText,
    Project,
)
from tests.e2e.annotation_helpers import eventually
from tests.pairs import conftest as pairs_fixtures

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# The pairs project of tests/pairs (adam admin, alice and bob annotators), made a fixture here too.
pairs_project = pairs_fixtures.pairs_project

# The bridge emoji is one code point but two UTF-16 units: a page that mixed the two would
# highlight every span one character off.
ORIGINAL = "Opening day 🌉 drew crowds. The bridge opened in 1911 and Mayor Ines Varga spoke. Engineers repaired the cables."
PERTURBED = "Opening day 🌉 drew crowds. The bridge opened in 1923 and Mayor Tom Price spoke. Engineers fixed the cables."
SWAPS = [("1911", "1923"), ("Ines Varga", "Tom Price"), ("repaired", "fixed")]


def make_text_items(
    project: Project, original: str = ORIGINAL, perturbed: str = PERTURBED, swaps: list[tuple[str, str]] = SWAPS,
    group: str = "t1",
) -> list[PairItem]:
    """One perturbed text with one item per swap, all open in round 1 (code-point offsets: Python's)."""
    pair_round, _ = PairRound.objects.get_or_create(project=project, number=1, defaults={"size": 10, "seed": 1})
    config = PairConfig.objects.get(project=project)
    source = PairOriginal.objects.create(project=project, external_id=group, text=original)
    text = PerturbedText.objects.create(
        project=project, original=source, group=group, text=perturbed, source=PerturbedText.Source.PAIRS
    )
    items = []
    for position, (old, new) in enumerate(swaps):
        o_start, p_start = original.index(old), perturbed.index(new)
        items.append(PairItem.objects.create(
            project=project, perturbed=text, position=position, external_id=f"{group}-{position}",
            original_start=o_start, original_end=o_start + len(old), original_words=old,
            perturbed_start=p_start, perturbed_end=p_start + len(new), perturbed_words=new,
            state=PairItem.State.OPEN, round=pair_round, judges_needed=config.judges_per_item,
            selection={"method": "random"},
        ))
    return items


@pytest.fixture
def text_items(pairs_project: Project) -> list[PairItem]:
    return make_text_items(pairs_project)


def open_labeling(page: Page, live_server: Any, project: Project) -> None:
    page.goto(live_server.url + reverse("pairs-label", args=[project.slug]))
    expect(page.locator("#pair-labeler.ready")).to_be_attached()


def shown_item(page: Page, item: PairItem, *, answerable: bool = True) -> None:
    """Wait until the page shows ``item`` and, unless ``answerable`` is False, takes answers to it: a new item ignores
    answers for a moment after it appears (label.js's SETTLE_MS), so a key pressed at once would be dropped."""
    expect(page.locator("#pair-labeler")).to_have_attribute("data-item-id", str(item.pk))
    expect(page.locator('[data-role="perturbed"] [data-role="target-span"]')).to_have_text(item.perturbed_words)
    if answerable:
        wait_until_answerable(page)


def wait_until_answerable(page: Page) -> None:
    """Wait for the page's own word that an answer now counts (its root's data-answerable), never a fixed sleep."""
    expect(page.locator("#pair-labeler")).to_have_attribute("data-answerable", "true")


def judgement(item: PairItem, user: Any) -> PairJudgement:
    return PairJudgement.objects.get(item=item, judge=user)


def text_before_target(page: Page, role: str) -> str:
    """The text the page renders before the target span: equal to the text sliced at the API's code points."""
    return page.evaluate(
        """(role) => {
          const el = document.querySelector(`[data-role="${role}"]`);
          const target = el.querySelector('[data-role="target-span"]');
          const range = document.createRange();
          range.setStart(el, 0);
          range.setEndBefore(target);
          return range.toString();
        }""",
        role,
    )


def test_the_items_span_is_highlighted_in_both_texts_at_its_code_points_and_the_others_are_faint(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    log_in(page, alice)
    date = text_items[0]
    open_labeling(page, live_server, date.project)
    shown_item(page, date)

    original = page.locator('[data-role="original"]')
    perturbed = page.locator('[data-role="perturbed"]')
    expect(original.locator('[data-role="target-span"]')).to_have_text("1911")
    expect(perturbed.locator('[data-role="target-span"]')).to_have_text("1923")
    assert text_before_target(page, "original") == ORIGINAL[: date.original_start]
    assert text_before_target(page, "perturbed") == PERTURBED[: date.perturbed_start]
    # The texts are rendered whole, nothing added or lost around the marks.
    expect(original).to_have_text(ORIGINAL)
    expect(perturbed).to_have_text(PERTURBED)
    # The other replaced spans of the same text: shown, faintly, and only in the changed text.
    expect(perturbed.locator('[data-role="other-span"]')).to_have_text(["Tom Price", "fixed"])
    expect(original.locator('[data-role="other-span"]')).to_have_count(0)
    target_colour = perturbed.locator('[data-role="target-span"]').evaluate("e => getComputedStyle(e).backgroundColor")
    other_colour = perturbed.locator('[data-role="other-span"]').first.evaluate(
        "e => getComputedStyle(e).backgroundColor"
    )
    assert target_colour != other_colour
    assert float(other_colour.rsplit(",", 1)[1].strip(" )")) < float(target_colour.rsplit(",", 1)[1].strip(" )"))


def test_keys_h_n_and_question_mark_save_and_show_the_next_item_until_nothing_is_left(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, synonym = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    expect(page.locator('[data-role="answered"]')).to_have_text("0")

    page.keyboard.press("h")
    shown_item(page, name)
    assert judgement(date, alice).label == "H"
    expect(page.locator('[data-role="original"] [data-role="target-span"]')).to_have_text("Ines Varga")
    expect(page.locator('[data-role="answered"]')).to_have_text("1")

    page.keyboard.press("n")
    shown_item(page, synonym)
    assert judgement(name, alice).label == "N"
    expect(page.locator('[data-role="original"] [data-role="target-span"]')).to_have_text("repaired")

    page.keyboard.press("?")
    expect(page.locator('[data-role="no-more-items"]')).to_be_visible()
    expect(page.locator('[data-role="no-more-items"]')).to_contain_text("Nothing left for you")
    expect(page.locator('[data-role="item"]')).to_be_hidden()
    expect(page.locator('[data-role="save-status"]')).to_have_text("Saved")
    assert judgement(synonym, alice).label == "?"
    rows = PairJudgement.objects.filter(judge=alice)
    assert sorted(rows.values_list("item_id", "label")) == [(date.pk, "H"), (name.pk, "N"), (synonym.pk, "?")]
    assert all(row.answered_at is not None and row.seconds is not None for row in rows)
    # The answers went to the item counters the consensus rule reads.
    assert [(i.votes_h, i.votes_n, i.votes_unsure) for i in PairItem.objects.order_by("pk")] == [
        (1, 0, 0), (0, 1, 0), (0, 0, 1)
    ]


def test_clicking_an_answer_saves_it_like_its_key(
    page: Page, live_server: Any, log_in: Any, bob: Any, text_items: list[PairItem]
) -> None:
    log_in(page, bob)
    open_labeling(page, live_server, text_items[0].project)
    shown_item(page, text_items[0])

    page.click('[data-label="N"]')

    shown_item(page, text_items[1])
    assert judgement(text_items[0], bob).label == "N"


def test_u_undoes_the_last_answer_and_shows_that_item_again_unanswered(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)

    page.keyboard.press("h")
    shown_item(page, name)
    assert judgement(date, alice).label == "H"

    page.keyboard.press("u")

    shown_item(page, date)
    expect(page.locator('[data-role="notice"]')).to_contain_text("taken back")
    expect(page.locator('[data-role="answered"]')).to_have_text("0")
    undone = judgement(date, alice)
    assert (undone.label, undone.answered_at) == ("", None)
    date.refresh_from_db()
    assert (date.votes_h, date.votes_n, date.votes_unsure) == (0, 0, 0)

    # Answered again, differently: the new answer is the one kept.
    page.keyboard.press("n")
    shown_item(page, name)
    assert judgement(date, alice).label == "N"


def test_ctrl_z_undoes_too(page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]) -> None:
    log_in(page, alice)
    open_labeling(page, live_server, text_items[0].project)
    shown_item(page, text_items[0])

    page.keyboard.press("?")
    shown_item(page, text_items[1])
    page.keyboard.press("Control+z")

    shown_item(page, text_items[0])
    assert judgement(text_items[0], alice).label == ""


def test_keys_are_ignored_while_typing_in_a_text_field(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    # Any text field counts: a note box or a search field a later version of the page may add.
    page.evaluate("""() => {
      const area = document.createElement('textarea'); area.dataset.test = 'note';
      const input = document.createElement('input'); input.type = 'text'; input.dataset.test = 'field';
      document.getElementById('pair-labeler').append(area, input);
    }""")

    guidelines = page.locator('[data-role="guidelines"]')
    guidelines_open = guidelines.evaluate("e => e.open")
    note = page.locator('[data-test="note"]')
    note.click()
    note.press_sequentially("h n ? u g")
    field = page.locator('[data-test="field"]')
    field.click()
    field.press_sequentially("hn?")
    expect(note).to_have_value("h n ? u g")
    expect(field).to_have_value("hn?")
    assert guidelines.evaluate("e => e.open") == guidelines_open  # "g" did not toggle them

    # Esc leaves the field; the next key answers the item still on screen, so none of the
    # letters typed above answered anything.
    page.keyboard.press("Escape")
    page.keyboard.press("n")
    shown_item(page, name)
    assert judgement(date, alice).label == "N"
    assert PairJudgement.objects.filter(judge=alice).exclude(label="").count() == 1


def test_a_second_answer_refused_with_409_is_explained_and_the_page_moves_on(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    from annotate.services.pairs.queue import record_judgement

    date, name, _ = text_items
    log_in(page, alice)
    open_labeling(page, live_server, date.project)
    shown_item(page, date)
    # Alice answers the same item elsewhere (another tab, a script) while the page shows it.
    record_judgement(date.project, alice, date.pk, "N")

    page.keyboard.press("h")

    notice = page.locator('[data-role="notice"]')
    expect(notice).to_contain_text("Not saved:")
    shown_item(page, name)
    assert judgement(date, alice).label == "N"


def test_an_answer_to_an_item_an_undo_elsewhere_gave_back_is_explained_in_one_sentence(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    from annotate.services.pairs.queue import record_judgement, serve_next_item, undo_last_judgement

    project = text_items[0].project
    first = serve_next_item(project, alice)
    record_judgement(project, alice, first.item_id, "N")
    log_in(page, alice)
    open_labeling(page, live_server, project)
    wait_until_answerable(page)
    on_screen = int(page.locator("#pair-labeler").get_attribute("data-item-id"))
    assert on_screen != first.item_id
    # Another tab takes the last answer back: its item is served again, the one on this page goes back to the queue.
    undo_last_judgement(project, alice)

    page.keyboard.press("h")

    # The API's 409 (not_served) tells a script to ask for its next item; the page shows it, and says so once.
    expect(page.locator('[data-role="notice"]')).to_have_text(
        "Not saved: this item is no longer served to you (an undo in another tab gives it back to the queue), "
        "so here is your next item."
    )
    shown_item(page, PairItem.objects.get(pk=first.item_id))
    assert not PairJudgement.objects.filter(item_id=on_screen, judge=alice).exists()


def test_an_annotator_with_nothing_to_judge_sees_the_end_state(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Project
) -> None:
    log_in(page, alice)
    open_labeling(page, live_server, pairs_project)

    expect(page.locator('[data-role="no-more-items"]')).to_be_visible()
    expect(page.locator('[data-role="item"]')).to_be_hidden()
    expect(page.locator('[data-role="left"]')).to_have_text("0")
    assert not PairJudgement.objects.exists()


def test_a_blocked_judge_is_told_why_nothing_is_served(
    page: Page, live_server: Any, log_in: Any, alice: Any, admin_user: Any, text_items: list[PairItem]
) -> None:
    BlockedJudge.objects.create(project=text_items[0].project, judge=alice, blocked_by=admin_user)
    log_in(page, alice)
    open_labeling(page, live_server, text_items[0].project)

    end = page.locator('[data-role="no-more-items"]')
    expect(end).to_be_visible()
    expect(end.locator('[data-role="end-title"]')).to_have_text("You are blocked in this project")
    expect(end.locator('[data-role="end-reason"]')).to_contain_text("You are blocked from judging")
    expect(page.locator('[data-role="progress"]')).to_be_hidden()
    assert not PairJudgement.objects.exists()


def test_a_judge_blocked_with_an_item_on_screen_is_told_so_before_and_after_a_reload(
    page: Page, live_server: Any, log_in: Any, alice: Any, admin_user: Any, text_items: list[PairItem]
) -> None:
    project = text_items[0].project
    log_in(page, alice)
    open_labeling(page, live_server, project)
    shown_item(page, text_items[0])
    BlockedJudge.objects.create(project=project, judge=alice, blocked_by=admin_user)
    page.keyboard.press("h")

    for reloaded in (False, True):
        if reloaded:
            open_labeling(page, live_server, project)
        end = page.locator('[data-role="no-more-items"]')
        expect(end.locator('[data-role="end-title"]')).to_have_text("You are blocked in this project")
        expect(end.locator('[data-role="end-reason"]')).to_contain_text(f'in the project "{project.name}"')
        expect(page.locator('[data-role="progress"]')).to_be_hidden()
        expect(page.locator('[data-role="item"]')).to_be_hidden()
    assert not PairJudgement.objects.exclude(label="").exists()


def test_an_empty_project_says_there_is_nothing_to_label_yet(
    page: Page, live_server: Any, log_in: Any, admin_user: Any, pairs_project: Project
) -> None:
    log_in(page, admin_user)
    open_labeling(page, live_server, pairs_project)
    end = page.locator('[data-role="no-more-items"]')
    expect(end.locator('[data-role="end-title"]')).to_have_text("Nothing to label yet")
    expect(end.locator('[data-role="import-link"]')).to_have_attribute("href", f"/projects/{pairs_project.slug}/#import")


def test_texts_with_markup_are_shown_as_text(
    page: Page, live_server: Any, log_in: Any, alice: Any, pairs_project: Project
) -> None:
    original = 'The council met. <script>window.__pwned = true</script> It approved <b>new</b> rules on Monday.'
    perturbed = 'The council met. <script>window.__pwned = true</script> It approved <b>new</b> rules on Friday.'
    (item,) = make_text_items(pairs_project, original, perturbed, [("Monday", "Friday")], group="hostile")
    log_in(page, alice)
    open_labeling(page, live_server, pairs_project)
    shown_item(page, item)

    expect(page.locator('[data-role="original"]')).to_have_text(original)
    expect(page.locator('[data-role="perturbed"]')).to_have_text(perturbed)
    assert page.locator('[data-role="perturbed"] script, [data-role="perturbed"] b').count() == 0
    assert page.evaluate("() => window.__pwned") is None


def test_the_guidelines_open_with_g_and_hold_the_default_examples(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    log_in(page, alice)
    open_labeling(page, live_server, text_items[0].project)
    shown_item(page, text_items[0])
    guidelines = page.locator('[data-role="guidelines"]')
    # A judge who has answered nothing here starts with them open.
    expect(guidelines).to_have_attribute("open", "")
    expect(guidelines).to_contain_text("Example 3, a harmless synonym (N).")

    page.keyboard.press("g")
    expect(guidelines).not_to_have_attribute("open", "")
    page.keyboard.press("g")
    expect(guidelines).to_have_attribute("open", "")
    expect(guidelines.locator('[data-role="shortcuts"]')).to_be_visible()


def test_the_home_page_link_opens_the_labeling_page(
    page: Page, live_server: Any, log_in: Any, alice: Any, text_items: list[PairItem]
) -> None:
    log_in(page, alice)
    page.click('[data-role="next-pair"]')

    shown_item(page, text_items[0])
    assert eventually(lambda: judgement(text_items[0], alice).served_at is not None)
