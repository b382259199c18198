"""The audit queue's order, chosen on the audit page: worst first (the default) or shuffled, a fixed order of each
auditor's own that owes nothing to the flag's figure. ``?order=`` on the page's address chooses it, the session keeps
it (no migration), and the item held stays until it is answered."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Project, Sample
from judging.models import AuditItem
from judging.services import audits
from judging.services.audits.queue import shuffle_key
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import HTMX, AuditScene, judge_sample, make_auditor, make_run, read_html

scene = audit_helpers.scene

pytestmark = pytest.mark.django_db


def more_items(scene: AuditScene, count: int) -> list[AuditItem]:
    """``count`` more flagged outputs, the first pass's p falling as they are made (the worst made last)."""
    run = make_run(scene.first_pass)
    first = scene.samples[0]
    made = []
    for number in range(count):
        sample = Sample.objects.create(project=scene.project, batch=first.batch, passage=first.passage,
                                       position=100 + number, external_id=f"m{number}", summary=f"Output m{number}.")
        judgement = judge_sample(run, sample, probability=0.4 - number * 0.03)
        made.append(AuditItem.objects.create(project=scene.project, sample=sample, flagged_by=judgement, reason="p"))
    return made


def served_in_order(project: Project, auditor: Any, order: str) -> list[int]:
    """The items served to the auditor one after another, each answered at once."""
    served = []
    while (audit := audits.serve_next_audit(project, auditor, order=order)) is not None:
        served.append(audit.item_id)
        audits.submit_audit(project, auditor, audit.item_id, score=3, agreed=False, reasoning_wrong=False, note="")
    return served


def test_shuffled_serves_a_fixed_order_of_the_auditor_s_own_and_worst_first_stays_the_default(
    scene: AuditScene,
) -> None:
    more_items(scene, 7)
    all_items = list(AuditItem.objects.filter(project=scene.project).values_list("pk", flat=True))
    hedy = make_auditor(scene.project, "hedy")
    ivan = make_auditor(scene.project, "ivan")
    scene.settings.audits_per_item = 3
    scene.settings.save()

    worst = served_in_order(scene.project, scene.auditor, audits.WORST_FIRST)
    figures = {item.pk: item.flagged_by.display_score for item in AuditItem.objects.select_related("flagged_by")}
    assert [figures[pk] for pk in worst] == sorted(figures.values())  # the default: the flag's figure ascending

    hedy_order = served_in_order(scene.project, hedy, audits.SHUFFLED)
    ivan_order = served_in_order(scene.project, ivan, audits.SHUFFLED)
    assert hedy_order == sorted(all_items, key=lambda pk: shuffle_key(hedy.pk, pk))
    assert ivan_order == sorted(all_items, key=lambda pk: shuffle_key(ivan.pk, pk))
    assert sorted(hedy_order) == sorted(ivan_order) == sorted(all_items)
    assert hedy_order != worst and ivan_order != worst and hedy_order != ivan_order  # 10 items: 10! orders each


def test_an_unknown_order_is_refused_by_the_service() -> None:
    with pytest.raises(ValueError, match="order must be one of worst, shuffled"):
        audits.serve_next_audit(None, None, order="random")  # type: ignore[arg-type]


def test_the_page_keeps_the_order_chosen_in_the_session_and_the_held_item_stays(scene: AuditScene) -> None:
    more_items(scene, 7)
    client = login(scene.auditor)
    url = reverse("judging-audit", args=[scene.project.slug])
    page = read_html(client.get(url).content)
    held = page.one(None, id="audit-view").attrs["data-item-id"]
    assert held == str(scene.queue_order[0].pk)  # worst first: output 1's p = 0.10
    chooser = page.one("p", data_role="queue-order")
    assert chooser.one("strong").attrs["data-order"] == "worst"
    assert chooser.one("a").attrs["href"] == url + "?order=shuffled"

    shuffled = client.get(url + "?order=shuffled")
    page = read_html(shuffled.content)
    assert page.one(None, id="audit-view").attrs["data-item-id"] == held  # the held item stays
    assert "Queue order: shuffled" in page.one("p", data_role="notice").text
    assert page.one("p", data_role="queue-order").one("strong").attrs["data-order"] == "shuffled"

    # Answered, the next items come in the auditor's shuffled order: through the page's own submit (htmx).
    open_items = set(AuditItem.objects.filter(project=scene.project).exclude(pk=int(held)).values_list("pk", flat=True))
    expected = sorted(open_items, key=lambda pk: shuffle_key(scene.auditor.pk, pk))
    seen = []
    current = int(held)
    for _ in range(3):
        answer = client.post(reverse("judging-audit-submit", args=[scene.project.slug, current]), {"score": "3"}, **HTMX)
        current = int(read_html(answer.content).one(None, id="audit-view").attrs["data-item-id"])
        seen.append(current)
    assert seen == expected[:3]

    # A new page load without ?order keeps it; ?order=worst goes back.
    assert read_html(client.get(url).content).one("p", data_role="queue-order").one("strong").attrs[
        "data-order"] == "shuffled"
    client.get(url + "?order=worst")
    assert read_html(client.get(url).content).one("p", data_role="queue-order").one("strong").attrs[
        "data-order"] == "worst"


def test_an_unknown_order_on_the_page_is_named_and_changes_nothing(scene: AuditScene) -> None:
    client = login(scene.auditor)
    url = reverse("judging-audit", args=[scene.project.slug])
    client.get(url + "?order=shuffled")
    answer = client.get(url + "?order=random")
    assert answer.status_code == 400
    page = read_html(answer.content)
    assert page.one("p", data_role="error").text == "No queue order 'random': choose worst (worst first) or shuffled."
    assert page.one("p", data_role="queue-order").one("strong").attrs["data-order"] == "shuffled"


def test_an_item_added_without_a_flag_takes_its_place_in_a_shuffled_queue(scene: AuditScene) -> None:
    # Worst first puts an item with no flag (no figure) last; shuffled, it falls anywhere, like any other.
    extra = Sample.objects.create(project=scene.project, batch=scene.samples[0].batch, passage=scene.samples[0].passage,
                                  position=50, external_id="added", summary="Added output.")
    added = AuditItem.objects.create(project=scene.project, sample=extra, reason="added by an admin")
    served = served_in_order(scene.project, scene.auditor, audits.SHUFFLED)
    every = [*(item.pk for item in scene.items), added.pk]
    assert served == sorted(every, key=lambda pk: shuffle_key(scene.auditor.pk, pk))
