"""The judge-vs-people page explains flag confirmation with an example at the project's own LLM flag threshold (two
auditors one apart across it give a median half a point past it), not always "3 and 4 give 3.5"."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Project
from judging.models import Judge
from judging.people import AuditRating, flags_confirmed, median_example
from judging.services.judges import update_judging_settings
from tests.conftest import login
from tests.judging.audit_helpers import read_html


def test_the_example_follows_the_threshold_and_says_what_flags_confirmed_computes() -> None:
    assert median_example(3) == "3 and 4 give 3.5, not confirmed; 3 and 3 give 3, confirmed"
    assert median_example(4) == "4 and 5 give 4.5, not confirmed; 4 and 4 give 4, confirmed"
    assert median_example(1) == "1 and 2 give 1.5, not confirmed; 1 and 1 give 1, confirmed"
    assert median_example(5) == "every median is at most 5, so at this threshold every audited flag is confirmed"
    for threshold in (1, 2, 3, 4):
        ratings = [AuditRating(item="x", auditor=1, auditor_score=threshold, judge_score=1.0),
                   AuditRating(item="x", auditor=2, auditor_score=threshold + 1, judge_score=1.0),
                   AuditRating(item="y", auditor=1, auditor_score=threshold, judge_score=1.0),
                   AuditRating(item="y", auditor=2, auditor_score=threshold, judge_score=1.0)]
        confirmed = flags_confirmed(ratings, {"x", "y"}, threshold)
        assert (confirmed["confirmed"], confirmed["flagged"]) == (1, 2)  # y is, x is not: as the words say


@pytest.mark.django_db
@pytest.mark.parametrize(("threshold", "said"), [
    (4, "4 and 5 give 4.5, not confirmed; 4 and 4 give 4, confirmed"),
    (2, "2 and 3 give 2.5, not confirmed; 2 and 2 give 2, confirmed"),
    (3, "3 and 4 give 3.5, not confirmed; 3 and 3 give 3, confirmed"),
])
def test_the_people_page_gives_the_example_at_the_project_s_threshold(
    project: Project, admin_user: Any, threshold: int, said: str
) -> None:
    judge = Judge.objects.create(project=project, name="gpt", kind=Judge.Kind.RUBRIC, base_url="http://x/v1", model="m")
    update_judging_settings(project, llm_flag_at_most=threshold)
    html = login(admin_user).get(reverse("judging-people", args=[project.slug, judge.pk])).content
    page = read_html(html)
    assert page.one("span", data_role="median-example").text == said
    text = " ".join(html.decode().split())
    assert f"median of its auditors' scores is at most {threshold} (with two auditors" in text
    if threshold != 3:
        assert "3 and 4 give 3.5" not in text
