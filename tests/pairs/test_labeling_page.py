"""The pair labeling page as Django serves it: who may open it, what it carries, the home page's link."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Membership, Project
from annotate.services.pairs.guidelines import DEFAULT_PAIR_GUIDELINES
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def client_for(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def label_url(project: Project) -> str:
    return reverse("pairs-label", args=[project.slug])


def test_the_labeling_page_lives_under_the_projects_pairs_prefix(pairs_project: Project) -> None:
    assert label_url(pairs_project) == "/projects/pairs/pairs/label/"


def test_an_annotator_gets_the_page_with_both_texts_and_the_three_answer_keys(
    pairs_project: Project, alice: Any
) -> None:
    response = client_for(alice).get(label_url(pairs_project))

    assert response.status_code == 200
    html = response.content.decode()
    for part in ('data-role="original"', 'data-role="perturbed"', 'data-label="H"', 'data-label="N"',
                 'data-label="?"', 'data-role="save-status"', 'data-role="undo"', 'data-role="no-more-items"'):
        assert part in html, part
    for key in ("<kbd>h</kbd> Hallucination", "<kbd>n</kbd> Not hallucination", "<kbd>?</kbd> Cannot determine",
                "Undo last answer <kbd>u</kbd>"):
        assert key in html, key
    # The script talks to the pairs API for this project, nothing else.
    page_data = response.context["api"]
    assert page_data == {
        "project": "pairs",
        "next_url": "/api/pairs/next/?project=pairs",
        "undo_url": "/api/pairs/undo/?project=pairs",
        "judgement_url": "/api/pairs/0/judgements/",
        "progress": {"answered": 0, "left": 0},
        # What the page opens on: not blocked, and a project without items yet (test_label_page_states).
        "blocked": None,
        "project_empty": True,
        # How often "Nothing left for you" asks again by itself (the setting's default).
        "check_every_ms": 15_000,
    }
    assert 'type="module" src="/static/annotate/pairs/label.js"' in html


def test_a_project_admin_may_open_the_page(pairs_project: Project, admin_user: Any) -> None:
    assert client_for(admin_user).get(label_url(pairs_project)).status_code == 200


def test_an_outsider_gets_404(pairs_project: Project, charlie: Any) -> None:
    assert client_for(charlie).get(label_url(pairs_project)).status_code == 404


def test_an_auditor_is_refused_with_403(pairs_project: Project, charlie: Any) -> None:
    Membership.objects.create(project=pairs_project, user=charlie, role=Membership.Role.AUDITOR)
    assert client_for(charlie).get(label_url(pairs_project)).status_code == 403


def test_a_spans_project_has_no_pair_labeling_page(project: Project, alice: Any) -> None:
    assert client_for(alice).get(label_url(project)).status_code == 404


def test_an_anonymous_visitor_is_sent_to_the_login_page(pairs_project: Project) -> None:
    response = Client().get(label_url(pairs_project))
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('login')}?next={label_url(pairs_project)}"


def test_the_page_only_answers_get(pairs_project: Project, alice: Any) -> None:
    assert client_for(alice).post(label_url(pairs_project)).status_code == 405


def test_blank_guidelines_show_the_default_with_its_four_worked_examples(pairs_project: Project, alice: Any) -> None:
    response = client_for(alice).get(label_url(pairs_project))

    html = response.content.decode()
    assert response.context["guidelines"] == DEFAULT_PAIR_GUIDELINES
    assert 'data-role="default-guidelines"' in html
    for example in ("Example 1, a changed date (H).", "Example 2, a swapped name (H).",
                    "Example 3, a harmless synonym (N).", "Example 4, an incoherent word (H)."):
        assert example in DEFAULT_PAIR_GUIDELINES
        assert example in html
    # Rendered escaped: the examples' quotation marks come out as entities.
    assert "&quot;The bridge opened to traffic in 1911 after three years of work.&quot;" in html


def test_the_projects_own_guidelines_replace_the_default_and_are_escaped(pairs_project: Project, alice: Any) -> None:
    pairs_project.guidelines = "Judge dates strictly. <script>alert('g')</script>"
    pairs_project.save()

    html = client_for(alice).get(label_url(pairs_project)).content.decode()

    assert "Judge dates strictly. &lt;script&gt;alert(&#x27;g&#x27;)&lt;/script&gt;" in html
    assert "<script>alert(" not in html
    assert "Example 1, a changed date" not in html
    assert 'data-role="default-guidelines"' not in html


def test_a_hostile_project_name_is_escaped_on_the_page(pairs_project: Project, alice: Any) -> None:
    pairs_project.name = "<script>window.__pwned = 1</script>Pairs"
    pairs_project.save()

    html = client_for(alice).get(label_url(pairs_project)).content.decode()

    assert "<script>window.__pwned" not in html
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;Pairs" in html


def test_the_home_page_links_an_annotator_to_label_their_pairs_projects(
    pairs_project: Project, project: Project, alice: Any
) -> None:
    html = client_for(alice).get(reverse("home")).content.decode()

    assert html.count('data-role="next-pair"') == 1
    assert f'data-role="next-pair" href="{label_url(pairs_project)}"' in html


def test_the_home_page_has_no_pair_link_for_an_auditor_or_an_outsider(pairs_project: Project, charlie: Any) -> None:
    assert 'data-role="next-pair"' not in client_for(charlie).get(reverse("home")).content.decode()
    Membership.objects.create(project=pairs_project, user=charlie, role=Membership.Role.AUDITOR)
    assert 'data-role="next-pair"' not in client_for(charlie).get(reverse("home")).content.decode()
