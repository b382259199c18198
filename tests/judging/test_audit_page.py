"""The audit page through Django's test client: both texts escaped, the judges' answers with labels, quoted
passages marked at their code points, blind mode keeping the judges out of the HTML until a score is given,
htmx fragments, wrong methods, and who may see it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Batch, Membership, Passage, Project
from judging.models import Audit
from tests.conftest import login
from tests.judging import audit_helpers
from tests.judging.audit_helpers import (
    HTMX,
    AuditScene,
    Clock,
    Element,
    build_scene,
    flag,
    judge_sample,
    make_run,
    marks_in,
    read_html,
)

# The audit scene and the queue's clock (fixtures of tests/judging/audit_helpers.py).
scene = audit_helpers.scene
clock = audit_helpers.clock

pytestmark = pytest.mark.django_db


def page_url(project: Project) -> str:
    return reverse("judging-audit", args=[project.slug])


def submit_url(project: Project, item_id: int) -> str:
    return reverse("judging-audit-submit", args=[project.slug, item_id])


def reveal_url(project: Project, item_id: int) -> str:
    return reverse("judging-audit-reveal", args=[project.slug, item_id])


def view_of(response: Any) -> Element:
    return read_html(response.content).one(id="audit-view")


def shown_item(response: Any) -> int:
    return int(view_of(response).attrs["data-item-id"])


def audit_in_turn(client: Client, project: Project, items: list[Any], score: str = "3") -> None:
    """Open the page (which serves the next item) and give it a score, for each of ``items`` in turn."""
    for item in items:
        assert shown_item(client.get(page_url(project))) == item.pk
        assert client.post(submit_url(project, item.pk), {"score": score}).status_code == 302


# --------------------------------------------------------------------------- the page


def test_the_page_shows_the_worst_item_with_both_texts_and_each_judges_answer(scene: AuditScene) -> None:
    response = login(scene.auditor).get(page_url(scene.project))
    assert response.status_code == 200
    view = view_of(response)
    assert shown_item(response) == scene.queue_order[0].pk
    sample = scene.samples[1]
    assert view.one(data_role="source").text == sample.passage.text
    assert view.one(data_role="summary").text == sample.summary
    assert [e.text for e in view.find(data_role="judge-score")] == ["3 · slightly unfaithful", "p = 0.100 · 1 + 4p = 1.40"]
    reasonings = view.find(data_role="judge-reasoning")
    assert "The 12.4 million figure is right" in reasonings[0].text
    assert [b.attrs["data-score"] for b in view.find("button") if "data-score" in b.attrs] == ["1", "2", "3", "4", "5"]
    assert view.one(data_role="flag-reason").text == scene.items[1].reason
    assert view.one(data_role="answered").text == "0" and view.one(data_role="left").text == "3"


def test_quoted_passages_are_marked_in_the_texts_at_their_code_points(scene: AuditScene) -> None:
    client = login(scene.auditor)
    audit_in_turn(client, scene.project, scene.queue_order[:1])
    response = client.get(page_url(scene.project))  # output 0: the explainer quotes both texts
    view = view_of(response)
    sample = scene.samples[0]
    source_marks = marks_in(view.one(data_role="source"))
    output_marks = marks_in(view.one(data_role="summary"))
    source, summary = sample.passage.text, sample.summary
    assert [(text, start) for text, start, _, _ in source_marks] == [
        ("eight weeks", source.index("eight weeks")), ("the regional council", source.index("the regional council")),
    ]
    assert [(text, start) for text, start, _, _ in output_marks] == [
        ("nine weeks of repairs", summary.index("nine weeks")), ("funded by the national government", summary.index("funded")),
    ]
    # Each mark names its quote in the reasoning, which says when a quote is in neither text.
    reasoning = view.find(data_role="judge-reasoning")[0]
    quotes = {q.attrs["data-quote"]: q.text for q in reasoning.find(data_role="reasoning-quote")}
    assert quotes[output_marks[0][3]] == "nine weeks of repairs"
    assert quotes[source_marks[1][3]] == "the regional council"
    assert [q.text for q in reasoning.find(data_role="reasoning-quote") if q.attrs["data-found"] == ""] == [
        "a toll of 3 euros"
    ]
    assert len(reasoning.find(data_role="quote-not-found")) == 1


def test_marks_count_code_points_after_an_emoji(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    emoji_output = scene.samples[2]  # "The bridge 🌉 reopened; the mayor said a 30 km/h limit applies until March."
    run = make_run(scene.explainer)
    judge_sample(run, emoji_output, score=1, reasoning='It adds "a 30 km/h limit applies" to the mayor.')
    client = login(scene.auditor)
    audit_in_turn(client, project, scene.queue_order[:2])
    view = view_of(client.get(page_url(project)))
    ((text, start, end, _),) = marks_in(view.one(data_role="summary"))
    assert (text, start, end) == ("a 30 km/h limit applies", 38, 61)
    assert emoji_output.summary[38:61] == "a 30 km/h limit applies"


def test_texts_and_answers_are_rendered_escaped(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    Passage.objects.filter(pk=scene.samples[1].passage_id).update(text="<script>alert('source')</script> Bridge.")
    scene.samples[1].summary = "<img src=x onerror=alert(1)> Bridge."
    scene.samples[1].save()
    response = login(scene.auditor).get(page_url(project))
    html = response.content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&#x27;source&#x27;)&lt;/script&gt;" in html
    view = view_of(response)
    assert view.one(data_role="source").text == "<script>alert('source')</script> Bridge."
    assert view.one(data_role="summary").text == "<img src=x onerror=alert(1)> Bridge."


def test_a_parse_error_shows_its_raw_answer_escaped(scene: AuditScene) -> None:
    client = login(scene.auditor)
    audit_in_turn(client, scene.project, scene.queue_order[:2])
    response = client.get(page_url(scene.project))
    assert "Looks fine to me &lt;b&gt;really&lt;/b&gt;" in response.content.decode()
    view = view_of(response)
    assert view.one(data_role="judge-raw").text == "Looks fine to me <b>really</b>"


def test_output_sentences_carry_the_first_pass_shading(scene: AuditScene) -> None:
    scene.first_judgements[1].sentence_scores = [0.05, 0.97]
    scene.first_judgements[1].save()
    view = view_of(login(scene.auditor).get(page_url(scene.project)))
    sentences = view.one(data_role="summary").find("span")
    assert [(s.attrs["data-sentence"], s.attrs["class"], s.attrs["data-first-pass"]) for s in sentences] == [
        ("0", "sentence shade-4", "0.05"), ("1", "sentence shade-0", "0.97"),
    ]


def test_the_empty_queue_says_there_is_nothing_to_audit(project: Project, batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).get(page_url(project))
    assert response.status_code == 200
    view = view_of(response)
    assert view.attrs["data-state"] == "empty"
    assert view.one(data_role="audit-empty").find("h2")[0].text == "Nothing to audit"


# --------------------------------------------------------------------------- saving


def test_a_verdict_saves_and_the_htmx_answer_is_the_next_item(scene: AuditScene, clock: Clock) -> None:
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    clock.advance(12.5)
    response = client.post(
        submit_url(scene.project, scene.queue_order[0].pk),
        {"score": "2", "agreed": "", "reasoning_wrong": "1", "note": "The figure is fine."}, **HTMX,
    )
    assert response.status_code == 200
    assert b"<html" not in response.content  # the fragment, not the page
    assert shown_item(response) == scene.queue_order[1].pk
    audit = Audit.objects.get(item=scene.queue_order[0], auditor=scene.auditor)
    assert (audit.score, audit.agreed, audit.reasoning_wrong, audit.note, audit.seconds) == (
        2, False, True, "The figure is fine.", 12.5
    )
    last = view_of(response).one(data_role="last-saved")
    assert last.attrs["data-seconds"] == "12.5"


def test_agree_saves_the_judges_score(scene: AuditScene) -> None:
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    client.post(submit_url(scene.project, scene.queue_order[0].pk), {"agreed": "1"}, **HTMX)
    audit = Audit.objects.get(item=scene.queue_order[0], auditor=scene.auditor)
    assert (audit.score, audit.agreed) == (3, True)


def test_without_htmx_a_verdict_redirects_to_the_page(scene: AuditScene) -> None:
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    response = client.post(submit_url(scene.project, scene.queue_order[0].pk), {"score": "4"})
    assert (response.status_code, response["Location"]) == (302, page_url(scene.project))


def test_a_bad_score_answers_400_with_the_message_and_keeps_the_item_and_the_note(scene: AuditScene) -> None:
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    response = client.post(submit_url(scene.project, scene.queue_order[0].pk), {"score": "7", "note": "half"}, **HTMX)
    assert response.status_code == 400
    view = view_of(response)
    assert view.one(data_role="error").text == "Not saved: score must be a whole number from 1 to 5, not '7'."
    assert shown_item(response) == scene.queue_order[0].pk
    assert view.one(data_role="note").text == "half"
    assert not Audit.objects.filter(answered_at__isnull=False).exists()


def test_a_second_verdict_answers_409_and_shows_the_next_item(scene: AuditScene) -> None:
    client = login(scene.auditor)
    client.get(page_url(scene.project))
    first = scene.queue_order[0]
    client.post(submit_url(scene.project, first.pk), {"score": "2"}, **HTMX)
    response = client.post(submit_url(scene.project, first.pk), {"score": "5"}, **HTMX)
    assert response.status_code == 409
    assert "you audited this item already (score 2)" in view_of(response).one(data_role="error").text
    assert shown_item(response) == scene.queue_order[1].pk
    assert Audit.objects.get(item=first, auditor=scene.auditor).score == 2


def test_agreeing_with_an_nli_probability_answers_409_and_the_agree_control_is_disabled(scene: AuditScene) -> None:
    scene.settings.explainer = None
    scene.settings.save()
    client = login(scene.auditor)
    view = view_of(client.get(page_url(scene.project)))
    agree = view.one("button", data_role="agree")
    assert "disabled" in agree.attrs and "NLI probability" in agree.attrs["title"]
    response = client.post(submit_url(scene.project, scene.queue_order[0].pk), {"agreed": "1"}, **HTMX)
    assert response.status_code == 409
    assert "not a 1-5 score" in view_of(response).one(data_role="error").text


# --------------------------------------------------------------------------- blind mode


def test_blind_mode_keeps_the_judges_out_of_the_html_until_a_score_is_given(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch, blind=True)
    client = login(scene.auditor)
    response = client.get(page_url(project))
    html = response.content.decode()
    view = view_of(response)
    assert view.attrs["data-state"] == "blind"
    assert view.find(data_role="judge-score") == [] and view.find(data_role="judge-reasoning") == []
    assert view.find(data_role="quote") == [] and view.find(data_role="flag-reason") == []
    assert "12.4 million figure" not in html and "3 · slightly unfaithful" not in html and "0.100" not in html
    form = view.one("form", data_role="audit-form")
    assert form.attrs["hx-post"] == reveal_url(project, scene.queue_order[0].pk)
    assert form.attrs["data-agree-score"] == ""  # not even the number agreeing would take

    revealed = client.post(reveal_url(project, scene.queue_order[0].pk), {"score": "4"}, **HTMX)
    assert revealed.status_code == 200
    view = view_of(revealed)
    assert view.attrs["data-state"] == "open"
    assert [e.text for e in view.find(data_role="judge-score")][0] == "3 · slightly unfaithful"
    assert view.one("input", data_role="score-input").attrs["value"] == "4"
    assert not Audit.objects.filter(answered_at__isnull=False).exists()  # the blind score is not a verdict yet
    # Reloading keeps it revealed, with the blind score chosen.
    assert view_of(client.get(page_url(project))).attrs["data-state"] == "open"

    client.post(submit_url(project, scene.queue_order[0].pk), {"score": "4", "reasoning_wrong": "1"}, **HTMX)
    audit = Audit.objects.get(item=scene.queue_order[0], auditor=scene.auditor)
    assert (audit.score, audit.blind, audit.reasoning_wrong) == (4, True, True)
    # The next item is hidden again.
    assert view_of(client.get(page_url(project))).attrs["data-state"] == "blind"


def test_a_score_changed_after_the_reveal_is_not_blind(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch, blind=True)
    client = login(scene.auditor)
    item = scene.queue_order[0]
    client.get(page_url(project))
    client.post(reveal_url(project, item.pk), {"score": "5"}, **HTMX)
    client.post(submit_url(project, item.pk), {"agreed": "1"}, **HTMX)
    audit = Audit.objects.get(item=item, auditor=scene.auditor)
    assert (audit.score, audit.agreed, audit.blind) == (3, True, False)


def test_revealing_needs_a_score_and_the_served_item(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch, blind=True)
    client = login(scene.auditor)
    client.get(page_url(project))
    no_score = client.post(reveal_url(project, scene.queue_order[0].pk), {"score": ""}, **HTMX)
    assert no_score.status_code == 400 and view_of(no_score).attrs["data-state"] == "blind"
    other = client.post(reveal_url(project, scene.queue_order[1].pk), {"score": "2"}, **HTMX)
    assert other.status_code == 409
    view = view_of(other)
    assert view.attrs["data-state"] == "blind" and "not the one served to you" in view.one(data_role="error").text


def test_the_blind_toggle_is_kept_per_user_in_the_session(scene: AuditScene) -> None:
    client = login(scene.auditor)
    assert view_of(client.get(page_url(scene.project))).attrs["data-blind"] == "off"
    response = client.post(reverse("judging-audit-blind", args=[scene.project.slug]), {"blind": "on"}, **HTMX)
    view = view_of(response)
    # This item's judges were shown already: blind mode starts with the next one.
    assert (view.attrs["data-blind"], view.attrs["data-state"]) == ("on", "open")
    assert "from your next item on" in view.one(data_role="notice").text
    client.post(submit_url(scene.project, scene.queue_order[0].pk), {"score": "3"}, **HTMX)
    assert view_of(client.get(page_url(scene.project))).attrs["data-state"] == "blind"
    # Another auditor keeps the project's default.
    hedy = Membership.objects.create(
        project=scene.project, user=type(scene.auditor).objects.create_user("hedy"), role=Membership.Role.AUDITOR
    ).user
    assert view_of(login(hedy).get(page_url(scene.project))).attrs["data-blind"] == "off"
    off = client.post(reverse("judging-audit-blind", args=[scene.project.slug]), {"blind": "off"})
    assert off.status_code == 302
    assert view_of(client.get(page_url(scene.project))).attrs["data-state"] == "open"


def test_the_projects_default_applies_until_the_auditor_uses_the_switch(scene: AuditScene) -> None:
    client = login(scene.auditor)
    client.post(submit_url(scene.project, shown_item(client.get(page_url(scene.project)))), {"score": "3"})
    scene.settings.blind_by_default = True
    scene.settings.save()
    assert view_of(client.get(page_url(scene.project))).attrs["data-blind"] == "on"
    client.post(reverse("judging-audit-blind", args=[scene.project.slug]), {"blind": "off"})
    scene.settings.blind_by_default = True
    scene.settings.save()
    assert view_of(client.get(page_url(scene.project))).attrs["data-blind"] == "off"


# --------------------------------------------------------------------------- htmx, methods, access


def test_an_htmx_get_answers_the_fragment(scene: AuditScene) -> None:
    response = login(scene.auditor).get(page_url(scene.project), **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="audit-view"') and "<html" not in html


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_the_page_answers_only_get(scene: AuditScene, method: str) -> None:
    assert getattr(login(scene.auditor), method)(page_url(scene.project)).status_code == 405


@pytest.mark.parametrize("name", ["judging-audit-submit", "judging-audit-reveal"])
def test_the_endpoints_answer_only_post(scene: AuditScene, name: str) -> None:
    url = reverse(name, args=[scene.project.slug, scene.items[0].pk])
    assert login(scene.auditor).get(url).status_code == 405
    assert login(scene.auditor).get(reverse("judging-audit-blind", args=[scene.project.slug])).status_code == 405


def test_annotators_get_403_outsiders_404_and_anonymous_users_the_login(
    scene: AuditScene, alice: Any, charlie: Any
) -> None:
    url = page_url(scene.project)
    assert login(alice).get(url).status_code == 403
    assert login(alice).post(submit_url(scene.project, scene.items[0].pk), {"score": "3"}).status_code == 403
    assert login(charlie).get(url).status_code == 404
    assert login(charlie).post(submit_url(scene.project, scene.items[0].pk), {"score": "3"}).status_code == 404
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert not Audit.objects.exists()


def test_pairs_projects_have_no_audit_page(scene: AuditScene) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=pairs, user=scene.auditor, role=Membership.Role.AUDITOR)
    assert login(scene.auditor).get(page_url(pairs)).status_code == 404


def test_an_item_of_another_project_or_a_huge_id_is_not_found(scene: AuditScene) -> None:
    other = Project.objects.create(name="Other", slug="other")
    Membership.objects.create(project=other, user=scene.auditor, role=Membership.Role.AUDITOR)
    client = login(scene.auditor)
    assert client.post(submit_url(other, scene.items[0].pk), {"score": "3"}).status_code == 404
    assert client.post(f"/projects/{scene.project.slug}/audit/99999999999999999999/submit/").status_code == 404


def test_an_item_added_without_a_flag_says_so(project: Project, batch: Batch) -> None:
    scene = build_scene(project, batch)
    extra = batch.samples.create(project=project, passage=scene.samples[0].passage, position=9, summary="Extra.")
    flag(extra, None, reason="")
    client = login(scene.auditor)
    audit_in_turn(client, project, scene.queue_order)
    view = view_of(client.get(page_url(project)))
    assert view.one(data_role="flag-reason").text == "added to the queue by an admin"
    assert view.one(data_role="no-judges").text.strip() == "No judge has answered on this output yet."
