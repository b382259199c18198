"""Whose quote a mark is, in the audit page's HTML: each mark names the judges quoting it (their cards' numbers, and
their names in its title), only the top card's marks start highlighted, and each card says how many passages it
quotes or that it quotes nothing. In blind mode none of this is in the page."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch, Passage, Project, Sample
from judging.models import AuditItem
from tests.conftest import login
from tests.judging.audit_helpers import AuditScene, build_scene, flag, judge_sample, make_judge, make_run, read_html

pytestmark = pytest.mark.django_db

SOURCE = "The harbour opened in 1911. Mayor Ines Varga cut the ribbon."
OUTPUT = "The harbour opened in 1923. Mayor Tom Price cut the ribbon."


def harbour_item(scene: AuditScene, project: Project, batch: Batch, *, top_reasoning: str) -> AuditItem:
    """An item served first whose top card (the explainer) says ``top_reasoning`` and whose third card quotes two
    passages, one of them also quoted by the top card when ``top_reasoning`` quotes it."""
    passage = Passage.objects.create(project=project, external_id="harbour", text=SOURCE)
    sample = Sample.objects.create(
        project=project, passage=passage, batch=batch, position=9, external_id="harbour", summary=OUTPUT
    )
    flagged_by = judge_sample(make_run(make_judge(project, "cheap-first")), sample, score=1)
    judge_sample(make_run(scene.explainer), sample, score=2, reasoning=top_reasoning)
    judge_sample(make_run(make_judge(project, "second-opinion")), sample, score=1,
                 reasoning='"opened in 1923" against "opened in 1911".')
    return flag(sample, flagged_by)


def page_of(scene: AuditScene) -> Any:
    response = login(scene.auditor).get(reverse("judging-audit", args=[scene.project.slug]))
    assert response.status_code == 200
    return read_html(response.content).one(id="audit-view")


def test_a_top_card_that_quotes_nothing_says_so_and_no_mark_starts_highlighted(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    harbour_item(scene, project, batch, top_reasoning="The dates are wrong.")
    view = page_of(scene)
    cards = view.find(data_role="judge")
    assert [(c.attrs["data-judge"], c.attrs["data-judge-number"]) for c in cards] == [
        ("gpt-explainer", "0"), ("cheap-first", "1"), ("second-opinion", "2"),
    ]
    assert "quotes-lit" in cards[0].attrs["class"].split()
    assert "Quotes nothing from the texts" in cards[0].one(data_role="quotes-nothing").text
    assert cards[2].find(data_role="quotes-nothing") == []
    assert "Highlight its 2 quoted passages" in cards[2].one(data_role="show-quotes").text
    marks = view.find("mark", data_role="quote")
    assert [(m.text, m.attrs["data-judges"], m.attrs["title"]) for m in marks] == [
        ("opened in 1911", "2", "Quoted by second-opinion"), ("opened in 1923", "2", "Quoted by second-opinion"),
    ]
    assert not any("data-lit" in m.attrs for m in marks)
    owner = view.one(data_role="quotes-owner")
    assert owner.attrs["data-quotes"] == "none" and owner.one(data_role="quotes-owner-name").text == "gpt-explainer"


def test_the_top_cards_marks_start_highlighted_and_a_shared_passage_names_both_judges(
    project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch)
    harbour_item(scene, project, batch, top_reasoning='It says "opened in 1923".')
    view = page_of(scene)
    marks = {m.text: m for m in view.find("mark", data_role="quote")}
    shared, other = marks["opened in 1923"], marks["opened in 1911"]
    assert (shared.attrs["data-judges"], shared.attrs["title"]) == ("0 2", "Quoted by gpt-explainer, second-opinion")
    assert "data-lit" in shared.attrs and "data-lit" not in other.attrs
    top = view.find(data_role="judge")[0]
    button = top.one(data_role="show-quotes")
    assert button.attrs["aria-pressed"] == "true" and "Its 1 quoted passage is highlighted" in button.text


def test_blind_mode_puts_no_mark_nor_card_in_the_page_until_the_score_then_the_top_cards_marks(
    project: Project, batch: Batch
) -> None:
    scene = build_scene(project, batch, blind=True)
    item = harbour_item(scene, project, batch, top_reasoning='It says "opened in 1923".')
    client = login(scene.auditor)
    html = client.get(reverse("judging-audit", args=[project.slug])).content.decode()
    view = read_html(html).one(id="audit-view")
    assert view.attrs["data-state"] == "blind"
    assert view.find("mark") == [] and view.find(data_role="judge") == [] and view.find(data_role="quotes-nothing") == []
    assert view.find(data_role="quotes-owner") == []
    assert "second-opinion" not in html and "gpt-explainer" not in html and "Quoted by" not in html

    reveal = reverse("judging-audit-reveal", args=[project.slug, item.pk])
    view = read_html(client.post(reveal, {"score": "2"}, HTTP_HX_REQUEST="true").content).one(id="audit-view")
    assert view.attrs["data-state"] == "open"
    lit = [m.text for m in view.find("mark", data_role="quote") if "data-lit" in m.attrs]
    assert lit == ["opened in 1923"]
