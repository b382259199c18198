"""A refused prompt save changes nothing: no version appears (not even the default's version 1), and the page's
"current version" line agrees with its history table."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Project
from judging.models import PromptVersion
from judging.prompts import DEFAULT_RUBRIC
from judging.services.judges import PromptRefused, save_prompt
from tests.annotate.results_scene import tags
from tests.conftest import login

pytestmark = pytest.mark.django_db

NO_SCALE = "Judge whether the output is faithful to the source. Be strict."


def test_a_refused_first_save_writes_no_version(project: Project) -> None:
    with pytest.raises(PromptRefused, match="no score scale"):
        save_prompt(project, "rubric", NO_SCALE)
    assert not PromptVersion.objects.filter(project=project).exists()
    with pytest.raises(PromptRefused, match="placeholder"):
        save_prompt(project, "intrinsic", "Rewrite it.")
    assert not PromptVersion.objects.filter(project=project).exists()


def test_the_page_after_a_refused_first_save_says_no_version_and_lists_none(
    project: Project, admin_user: Any
) -> None:
    url = reverse("judging-prompt", args=[project.slug, "rubric"])
    response = login(admin_user).post(url, {"text": NO_SCALE, "note": "stricter"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "Not saved: The rubric has no score scale" in html
    assert "No version yet" in html
    page = tags(response)
    assert not page.find("tr", data_version="1") and not page.find("strong", data_role="current-version")
    assert NO_SCALE in html  # the refused text stays in the editor to be fixed
    assert not PromptVersion.objects.exists()


def test_a_refused_save_after_versions_exist_keeps_the_history_as_it_was(project: Project, admin_user: Any) -> None:
    first = save_prompt(project, "rubric", DEFAULT_RUBRIC + "\nBe strict.")  # version 1 (default), then 2
    assert first.number == 2
    url = reverse("judging-prompt", args=[project.slug, "rubric"])
    response = login(admin_user).post(url, {"text": NO_SCALE})
    assert response.status_code == 400
    page = tags(response)
    assert [row["data-version"] for row in page.find("tr") if "data-version" in row] == ["2", "1"]
    assert "Current: version <strong data-role=\"current-version\">2</strong>" in response.content.decode()
    assert list(PromptVersion.objects.order_by("number").values_list("number", flat=True)) == [1, 2]


def test_a_valid_first_save_still_records_the_default_as_version_1(project: Project, admin_user: Any) -> None:
    url = reverse("judging-prompt", args=[project.slug, "rubric"])
    response = login(admin_user).post(url, {"text": DEFAULT_RUBRIC + "\nBe strict.", "note": "stricter"})
    assert response.status_code == 302
    assert list(PromptVersion.objects.order_by("number").values_list("number", "note")) == [
        (1, "default"), (2, "stricter")]
