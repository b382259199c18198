"""Creating a project: slugs follow one pattern, names and slugs fit their columns, bad input creates nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from annotate.models import Membership, Project
from annotate.services.projects import ProjectError, create_project

SLUG_RULE = "lowercase letters and digits, in words joined by single hyphens (e.g. pilot-study-2)"


@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["Pilot", "pilot_study", "pilot--study", "-pilot", "pilot-", "pi lot", "pilöt", "a.b"])
def test_a_slug_outside_the_pattern_is_refused(slug: str) -> None:
    with pytest.raises(ProjectError) as failure:
        create_project("Pilot", slug=slug)
    assert str(failure.value) == f"slug: {slug!r} is not a valid slug; use {SLUG_RULE}"
    assert not Project.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("slug", ["pilot", "pilot-study-2", "2026", "a-b-c"])
def test_a_slug_inside_the_pattern_is_kept_as_typed(slug: str) -> None:
    assert create_project("Pilot", slug=slug).slug == slug


@pytest.mark.django_db
def test_a_slug_made_from_the_name_follows_the_pattern() -> None:
    assert create_project("My_Project  -- Two!").slug == "my-project-two"
    assert create_project("Über Study").slug == "uber-study"
    long_name = "word " * 40  # 199 characters once stripped: a 100-character slug cut at a word's end
    project = create_project(long_name)
    assert project.slug == ("word-" * 20)[:99]
    assert len(project.name) == 199


@pytest.mark.django_db
def test_a_name_without_letters_or_digits_needs_a_slug() -> None:
    with pytest.raises(ProjectError, match=r"^slug: the name has no letters or digits to make a slug of; choose one"):
        create_project("研究")
    assert create_project("研究", slug="research").name == "研究"


@pytest.mark.django_db
def test_a_name_over_two_hundred_characters_is_refused_and_nothing_is_created() -> None:
    assert create_project("n" * 200, slug="just-fits").name == "n" * 200
    with pytest.raises(ProjectError) as failure:
        create_project("n" * 201, slug="too-long")
    assert str(failure.value) == "name: at most 200 characters (this one has 201)"
    assert list(Project.objects.values_list("slug", flat=True)) == ["just-fits"]


@pytest.mark.django_db
def test_a_slug_over_a_hundred_characters_is_refused() -> None:
    assert create_project("Fits", slug="s" * 100).slug == "s" * 100
    with pytest.raises(ProjectError) as failure:
        create_project("Too long", slug="s" * 101)
    assert str(failure.value) == "slug: at most 100 characters (this one has 101)"
    assert Project.objects.count() == 1


def test_the_form_shows_the_length_error_and_creates_nothing(admin_user: Any,
                                                             client_for: Callable[[Any], Client]) -> None:
    response = client_for(admin_user).post("/projects/new/", {"name": "x" * 250, "slug": ""})
    assert response.status_code == 400
    html = response.content.decode()
    assert '<p class="error" role="alert">name: at most 200 characters (this one has 250)</p>' in html
    assert not Project.objects.exists()
    assert not Membership.objects.exists()


def test_the_form_refuses_a_bad_slug_and_keeps_what_was_typed(admin_user: Any,
                                                             client_for: Callable[[Any], Client]) -> None:
    response = client_for(admin_user).post("/projects/new/", {"name": "Pilot", "slug": "Pilot_Study"})
    assert response.status_code == 400
    html = response.content.decode()
    assert f"slug: &#x27;Pilot_Study&#x27; is not a valid slug; use {SLUG_RULE}" in html
    assert 'value="Pilot_Study"' in html
    assert 'pattern="[a-z0-9]+(-[a-z0-9]+)*" maxlength="100"' in html
    assert not Project.objects.exists()


def test_the_form_creates_a_project_with_a_good_slug(admin_user: Any, client_for: Callable[[Any], Client]) -> None:
    response = client_for(admin_user).post("/projects/new/", {"name": "Pilot", "slug": "pilot-2"})
    assert response.status_code == 302
    assert response["Location"] == "/projects/pilot-2/"
    assert Membership.objects.get(project__slug="pilot-2").role == Membership.Role.ADMIN
