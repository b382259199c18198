"""A rubric's levels are checked strictly: a level outside 1-5 ("6 superb", "0 = nonsense") and a level with no
description (a line "3" alone) are refused, each naming its line, and nothing is saved; a number that is not a level
("100% of the claims", "2.5") is left alone, and a level described on the lines under it counts."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Project
from judging.models import PromptVersion
from judging.prompts import DEFAULT_RUBRIC, rubric_problems
from judging.services.judges import PromptRefused, save_prompt
from tests.conftest import login

FIVE = "Scale:\n5 - all verifiable\n4 - one minor item\n3 - several minor items\n2 - some harmful\n1 - mostly wrong\n"


def test_the_default_rubric_and_a_plain_scale_are_accepted() -> None:
    assert rubric_problems(DEFAULT_RUBRIC) == []
    assert rubric_problems(FIVE) == []


def test_a_level_outside_1_to_5_is_refused_naming_its_line() -> None:
    assert rubric_problems(FIVE + "6 superb\n") == [
        'line 7 ("6 superb") defines score 6, outside the scale 1 to 5: the judge may answer only 1 to 5, so remove '
        "that level (or start the line with something other than a number)"]
    problems = rubric_problems("0 = nonsense\n" + FIVE + "**7**: flawless\n10 - perfect")
    assert [problem.split(" (", 1)[0] for problem in problems] == ["line 1", "line 8", "line 9"]
    assert 'line 9 ("10 - perfect") defines score 10' in problems[2]


def test_lines_that_are_only_a_number_define_no_level() -> None:
    text = "Scale:\n5 - all verifiable\n4 - one minor item\n3\n2\n1 - mostly wrong\n"
    assert rubric_problems(text) == [
        'line 4 ("3") gives score 3 no description: write what a 3 means after the number',
        'line 5 ("2") gives score 2 no description: write what a 2 means after the number',
    ]
    assert rubric_problems("1\n2\n3\n4\n5") == [
        f'line {n} ("{n}") gives score {n} no description: write what a {n} means after the number' for n in range(1, 6)]
    assert rubric_problems(FIVE.replace("3 - several minor items", "**3**:")) == [
        'line 4 ("**3**:") gives score 3 no description: write what a 3 means after the number']


def test_numbers_that_are_no_levels_and_descriptions_under_a_level_are_fine() -> None:
    under = "Scale:\n5:\n  all verifiable\n4:\n  one minor item\n3:\n  several\n2:\n  some harmful\n1:\n  mostly wrong\n"
    assert rubric_problems(under) == []
    assert rubric_problems(FIVE + "100% of the claims must be checked.\n2.5 is no score.\n") == []


@pytest.mark.django_db
def test_saving_such_a_rubric_is_refused_with_the_line_in_its_own_words_and_nothing_is_written(
    project: Project, admin_user: Any
) -> None:
    with pytest.raises(PromptRefused) as refused:
        save_prompt(project, "rubric", FIVE + "6 Superb")
    assert str(refused.value).startswith('Line 7 ("6 Superb") defines score 6, outside the scale 1 to 5')
    assert not PromptVersion.objects.filter(project=project).exists()

    url = reverse("judging-prompt", args=[project.slug, "rubric"])
    html = login(admin_user).post(url, {"text": FIVE.replace("2 - some harmful", "2"), "note": ""}).content.decode()
    assert "Not saved: Line 5 (&quot;2&quot;) gives score 2 no description" in html
    assert not PromptVersion.objects.filter(project=project).exists()
