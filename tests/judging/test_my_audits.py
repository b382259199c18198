"""My audits (/projects/<slug>/audit/mine/): an auditor finds every verdict they saved, whatever tab saved it (``u``
knows only its own tab's), newest first, 50 a page, narrowed by judge, score, disagreement and the reasoning mark; each
opens the audit page's answered view, where a change keeps the first blind score. Admins list every auditor's, by
auditor, and change only their own. The audit page and the project page link to it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Membership, Project
from judging.models import Audit, AuditItem
from judging.services import audits
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import AuditScene, Clock, Element, make_auditor, read_html

scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db


def mine_url(scene: AuditScene, **query: str) -> str:
    url = reverse("judging-my-audits", args=[scene.project.slug])
    return url + ("?" + "&".join(f"{name}={value}" for name, value in query.items()) if query else "")


def rows(client: Client, url: str) -> list[Element]:
    """The listed verdicts' rows, in order."""
    response = client.get(url)
    assert response.status_code == 200, response.status_code
    return [row for row in read_html(response.content).find("tr") if "data-audit" in row.attrs]


def cell(row: Element, role: str) -> str:
    return " ".join(row.one("td", data_role=role).text.split())


def answer(scene: AuditScene, auditor: Any, score: int | None, *, clock: Clock, agreed: bool = False,
           reasoning_wrong: bool = False, note: str = "", blind_score: int | None = None) -> Audit:
    """The auditor's next item (worst first) served and answered a minute later."""
    served = audits.serve_next_audit(scene.project, auditor)
    assert served is not None
    if blind_score is not None:
        audits.give_blind_score(scene.project, auditor, served.item_id, blind_score)
    clock.advance(60)
    audit, _ = audits.submit_audit(scene.project, auditor, served.item_id, score=score, agreed=agreed,
                                   reasoning_wrong=reasoning_wrong, note=note)
    return audit


def test_an_auditor_lists_their_verdicts_newest_first_with_what_they_saw_and_said(
    scene: AuditScene, clock: Clock
) -> None:
    # Worst first: output 1 (explained 3), output 0 (explained 2, with reasoning), output 2 (a parse error: the
    # first pass's p = 0.45 shown instead).
    first = answer(scene, scene.auditor, 4, clock=clock, note="too harsh")
    second = answer(scene, scene.auditor, None, clock=clock, agreed=True, reasoning_wrong=True)
    third = answer(scene, scene.auditor, 3, clock=clock, blind_score=2)
    hedy = make_auditor(scene.project, "hedy")
    Audit.objects.create(item=scene.items[0], auditor=hedy, score=1, served_at=clock(), answered_at=clock())

    listed = rows(login(scene.auditor), mine_url(scene))
    assert [row.attrs["data-audit"] for row in listed] == [str(third.pk), str(second.pk), str(first.pk)]
    newest, middle, oldest = listed
    assert cell(oldest, "sample") == "1 · batch-1" and cell(oldest, "judge") == "gpt-explainer · run " + str(
        scene.explanations[1].run_id)
    assert cell(oldest, "judge-score") == "3 · slightly unfaithful"
    assert cell(oldest, "score") == "4 · very faithful disagrees"
    assert (cell(oldest, "agreed"), cell(oldest, "reasoning-wrong"), cell(oldest, "note")) == ("—", "—", "too harsh")
    assert (cell(middle, "score"), cell(middle, "agreed"), cell(middle, "reasoning-wrong")) == (
        "2 · very unfaithful", "yes", "yes")
    assert cell(newest, "judge") == "nli-first · run " + str(scene.first_judgements[2].run_id)
    assert cell(newest, "judge-score") == "p = 0.450 · 1 + 4p = 2.80"
    # 1 + 4p = 2.8 is level 3: the auditor's 3 agrees; the 2 given blind stays recorded beside it.
    assert cell(newest, "score") == "3 · slightly unfaithful 2 given blind"
    assert all(row.find("a", data_role="change") for row in listed)
    assert "hedy" not in login(scene.auditor).get(mine_url(scene)).content.decode()


def test_filters_narrow_by_judge_score_disagreement_and_reasoning_mark(scene: AuditScene, clock: Clock) -> None:
    answer(scene, scene.auditor, 4, clock=clock)  # output 1, judge said 3: disagrees
    answer(scene, scene.auditor, None, clock=clock, agreed=True, reasoning_wrong=True)  # output 0, 2 = 2
    answer(scene, scene.auditor, 5, clock=clock)  # output 2, nli 1 + 4p = 2.8 -> 3: disagrees
    client = login(scene.auditor)

    def samples(**query: str) -> list[str]:
        return [cell(row, "sample").split(" ")[0] for row in rows(client, mine_url(scene, **query))]

    assert samples() == ["2", "0", "1"]
    assert samples(judge=str(scene.explainer.pk)) == ["0", "1"]
    assert samples(judge=str(scene.first_pass.pk)) == ["2"]
    assert samples(score="2") == ["0"]
    assert samples(disagreements="1") == ["2", "1"]
    assert samples(reasoning_wrong="1") == ["0"]
    assert samples(disagreements="1", judge=str(scene.explainer.pk)) == ["1"]
    page = read_html(client.get(mine_url(scene, score="9")).content)
    assert "Score '9' is not one of the choices: left out." == page.one("p", data_role="filter-problems").text
    assert len([row for row in page.find("tr") if "data-audit" in row.attrs]) == 3


def test_fifty_a_page_and_the_page_links_keep_the_filters(
    project: Project, batch: Batch, clock: Clock
) -> None:
    auditor = make_auditor(project)
    sample = batch.samples.first()
    assert sample is not None
    made = []
    for number in range(53):
        other_sample = sample if number == 0 else type(sample).objects.create(
            project=project, batch=batch, passage=sample.passage, position=10 + number, external_id=f"x{number}",
            summary=f"Output {number}.")
        item = AuditItem.objects.create(project=project, sample=other_sample, reason="added")
        moment = clock() + timedelta(minutes=number)
        made.append(Audit.objects.create(item=item, auditor=auditor, score=4 if number % 2 else 2, served_at=moment,
                                         answered_at=moment))
    client = login(auditor)
    url = reverse("judging-my-audits", args=[project.slug])
    first = read_html(client.get(url).content)
    listed = [row.attrs["data-audit"] for row in first.find("tr") if "data-audit" in row.attrs]
    assert listed == [str(audit.pk) for audit in reversed(made)][:50]
    assert first.one("p", data_role="audit-count").text.strip() == "53 verdicts."
    second = read_html(client.get(url + "?page=2").content)
    assert [row.attrs["data-audit"] for row in second.find("tr") if "data-audit" in row.attrs] == [
        str(audit.pk) for audit in reversed(made[:3])]
    # Only the score-4 ones (26 of them): one page, no page links.
    filtered = client.get(url + "?score=4").content.decode()
    assert "26 verdicts with these filters." in filtered and 'rel="next"' not in filtered
    assert first.one("a", rel="next").attrs["href"] == "?page=2"


def test_the_page_links_keep_the_filters(project: Project, batch: Batch, clock: Clock) -> None:
    auditor = make_auditor(project)
    sample = batch.samples.first()
    assert sample is not None
    for number in range(55):
        other = type(sample).objects.create(project=project, batch=batch, passage=sample.passage,
                                            position=10 + number, external_id=f"y{number}", summary=f"Out {number}.")
        item = AuditItem.objects.create(project=project, sample=other, reason="added")
        Audit.objects.create(item=item, auditor=auditor, score=2, served_at=clock(), answered_at=clock(),
                             reasoning_wrong=True)
    page = read_html(login(auditor).get(
        reverse("judging-my-audits", args=[project.slug]) + "?score=2&reasoning_wrong=1").content)
    assert page.one("a", rel="next").attrs["href"] == "?score=2&reasoning_wrong=1&page=2"


def test_change_opens_the_answered_view_and_a_change_keeps_the_first_blind_score(
    scene: AuditScene, clock: Clock
) -> None:
    saved = answer(scene, scene.auditor, 2, clock=clock, blind_score=2)
    assert (saved.blind, saved.blind_score) == (True, 2)
    client = login(scene.auditor)  # a new session: the tab that saved it is gone
    (row,) = rows(client, mine_url(scene))
    change_url = row.one("a", data_role="change").attrs["href"]
    assert change_url == reverse("judging-audit-answered", args=[scene.project.slug, saved.pk])
    shown = read_html(client.get(change_url).content)
    assert shown.one(None, id="audit-view").attrs["data-state"] == "change"
    assert shown.one("input", data_role="score-input").attrs["value"] == "2"
    client.post(change_url, {"score": "4", "note": "second look"})
    saved.refresh_from_db()
    assert (saved.score, saved.blind, saved.blind_score, saved.note) == (4, False, 2, "second look")
    (row,) = rows(client, mine_url(scene))
    assert cell(row, "score") == "4 · very faithful 2 given blind disagrees"
    assert row.find("span", data_role="changed")


def test_admins_list_every_auditor_s_verdicts_by_auditor_and_change_only_their_own(
    scene: AuditScene, clock: Clock, admin_user: Any
) -> None:
    graces = answer(scene, scene.auditor, 4, clock=clock)
    admins = answer(scene, admin_user, 1, clock=clock)
    admin = login(admin_user)
    listed = {row.attrs["data-audit"]: row for row in rows(admin, mine_url(scene))}
    assert set(listed) == {str(graces.pk), str(admins.pk)}
    assert cell(listed[str(graces.pk)], "auditor") == "grace"
    assert not listed[str(graces.pk)].find("a", data_role="change")  # a verdict is its auditor's word
    assert listed[str(admins.pk)].find("a", data_role="change")
    only_grace = rows(admin, mine_url(scene, auditor=str(scene.auditor.pk)))
    assert [row.attrs["data-audit"] for row in only_grace] == [str(graces.pk)]
    page = read_html(admin.get(mine_url(scene)).content)
    assert page.one("h1").text == "Audits"
    options = {option.text.strip() for option in page.one("select", name="auditor").find("option")}
    assert {"grace", "adam (you)"} <= options
    # An auditor's own list ignores another auditor's id in the query.
    assert [row.attrs["data-audit"] for row in rows(login(scene.auditor), mine_url(scene, auditor=str(
        admin_user.pk)))] == [str(graces.pk)]


def test_the_audit_page_and_the_project_page_link_to_my_audits(scene: AuditScene, alice: Any) -> None:
    client = login(scene.auditor)
    audit_page = read_html(client.get(reverse("judging-audit", args=[scene.project.slug])).content)
    link = audit_page.one("a", data_role="my-audits-link")
    assert (link.attrs["href"], link.text) == (mine_url(scene), "My audits")
    project_page = read_html(client.get(reverse("project", args=[scene.project.slug])).content)
    assert project_page.one("a", data_role="my-audits-link").attrs["href"] == mine_url(scene)
    empty = read_html(client.get(mine_url(scene)).content)
    assert "No verdict saved yet by you" in empty.one("p", data_role="no-audits").text
    # Annotators work blind: no link, and the page is refused.
    assert not read_html(login(alice).get(reverse("project", args=[scene.project.slug])).content).find(
        "a", data_role="my-audits-link")
    assert login(alice).get(mine_url(scene)).status_code == 403


def test_an_outsider_gets_404_and_a_visitor_the_login_page(scene: AuditScene, charlie: Any) -> None:
    assert login(charlie).get(mine_url(scene)).status_code == 404
    assert Client().get(mine_url(scene)).status_code == 302
    assert login(scene.auditor).post(mine_url(scene)).status_code == 405
    Membership.objects.filter(user=scene.auditor).update(role=Membership.Role.ANNOTATOR)
    assert login(scene.auditor).get(mine_url(scene)).status_code == 403
