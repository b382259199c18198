"""Small things the judging pages say: a synthetic set's refusal appears once, and the judges list's Mode column
holds a mode only where a judge has one (rubric judges), not its kind again."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch
from judging.models import Judge, SyntheticSet
from judging.services.ingest import import_judgements
from tests.conftest import login
from tests.judging.audit_helpers import make_judge
from tests.judging.synthetic_scene import writer_judge


@pytest.mark.django_db
def test_a_synthetic_set_refusal_is_shown_once(batch: Batch, admin_user: Any) -> None:
    """The batch's three outputs have one or two sentences: none has five, and the page says so once."""
    writer = writer_judge(batch.project, "http://127.0.0.1:9/v1")
    response = login(admin_user).post(reverse("judging-synthetic-create", args=["demo"]),
                                      {"name": "five", "writer": writer.pk, "seed": "0"})
    assert response.status_code == 400
    page = response.content.decode()
    assert page.count("none of the 3 outputs has exactly 5 sentences") == 1
    refusal = re.search(r'data-role="refusal">(.*?)</div>', page, re.S)
    assert refusal and "none of the 3 outputs has exactly 5 sentences" in refusal.group(1)
    # The form's fields are still there, with what was typed.
    assert 'name="name"' in page and 'value="five"' in page
    assert not SyntheticSet.objects.exists()


@pytest.mark.django_db
def test_a_field_error_of_the_synthetic_form_is_shown_once_beside_its_field(batch: Batch, admin_user: Any) -> None:
    response = login(admin_user).post(reverse("judging-synthetic-create", args=["demo"]),
                                      {"name": "x", "writer": "", "seed": "-1"})
    assert response.status_code == 400
    page = response.content.decode()
    assert page.count("Seed must be at least 0, not -1.") == 1  # the app's words, naming the field as labelled
    assert 'data-role="refusal"' not in page


@pytest.mark.django_db
def test_the_mode_column_shows_a_mode_only_for_rubric_judges(batch: Batch, admin_user: Any, tmp_path: Any) -> None:
    project = batch.project
    make_judge(project, "llm-reasoning")
    make_judge(project, "llm-terse", with_reasoning=False)
    make_judge(project, "hhem", Judge.Kind.NLI, nli_model_path=str(tmp_path))
    import_judgements(project, [("outside.jsonl", b'{"sample": "0", "judge": "outside", "score": 4}')])
    page = login(admin_user).get(reverse("judging-judges", args=["demo"])).content.decode()
    judges = {judge.name: judge.pk for judge in Judge.objects.filter(project=project)}
    modes = {name: page_mode(page, pk) for name, pk in judges.items()}
    assert modes == {"llm-reasoning": "reasoning", "llm-terse": "score only", "hhem": "—", "outside": "—"}


def page_mode(page: str, pk: int) -> str:
    """The text of the Mode cell in a judge's row."""
    row = re.search(rf'<tr data-judge="{pk}">(.*?)</tr>', page, re.S)
    assert row, f"no row for judge {pk}"
    cell = re.search(r'<td data-role="mode">(.*?)</td>', row.group(1), re.S)
    assert cell, "no Mode cell"
    return re.sub(r"<[^>]+>", "", cell.group(1)).strip()
