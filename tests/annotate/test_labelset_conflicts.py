"""Two admins editing the label set and guidelines at once: a save from a version that is no longer the current one
is refused with the edit kept on the form (before, it became the next version and dropped the other's changes).

The PostgreSQL test races two saves for real; run it with scripts/with-postgres.sh (``make test`` does).
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotate.models import LabelSetVersion, Membership, Project
from annotate.services import labelsets
from annotate.taxonomy import DEFAULT_TAXONOMY
from tests.conftest import login, make_user, needs_postgres
from tests.races import race, slowed

URL = "/projects/demo/labels/"
HTMX = {"HTTP_HX_REQUEST": "true"}
FIELDS = ("name", "category", "hotkey", "color", "description", "example")


def default_labels() -> list[dict[str, Any]]:
    return copy.deepcopy(DEFAULT_TAXONOMY["labels"])


def form_of(labels: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The editor's POST body, as a browser sends it (parallel lists; checkboxes carry the row index)."""
    body: dict[str, Any] = {key: [str(label.get(key, "")) for label in labels] for key in FIELDS}
    body["retired"] = [str(i) for i, label in enumerate(labels) if label.get("retired")]
    return body | {"guidelines": "", "note": ""} | extra


def base_of(html: str) -> str:
    found = re.search(r'<input type="hidden" name="base_version" value="([^"]*)">', html)
    assert found, "the editor carries no base_version"
    return found.group(1)


def second_admin(project: Project) -> Any:
    bea = make_user("bea")
    Membership.objects.create(project=project, user=bea, role=Membership.Role.ADMIN)
    return bea


@pytest.mark.django_db
def test_a_save_from_a_version_another_admin_replaced_meanwhile_is_refused_and_kept_on_the_form(
    project: Project, admin_user: Any
) -> None:
    bea = second_admin(project)
    opened = login(admin_user).get(URL).content.decode()
    assert base_of(opened) == "1"  # no version saved yet: the first save keeps the label set as version 1
    theirs = default_labels()
    theirs[3]["description"] = "Bea's wording."
    labelsets.save_label_set(project, theirs, guidelines="Bea's guidelines.", author=bea, base_version=1)

    mine = default_labels()
    mine[0]["color"] = "#123456"
    response = login(admin_user).post(URL, form_of(mine, guidelines="Adam's guidelines.", base_version="1"))
    assert response.status_code == 400
    html = response.content.decode()
    version_two = LabelSetVersion.objects.get(project=project, number=2)
    assert (
        f"Version 2 was saved by bea at {timezone.localtime(version_two.created_at):%Y-%m-%d %H:%M} " in html
        and "while you edited (from version 1); your changes are below, not saved: compare with version 2 and "
            "save again." in html
    ), html
    assert ">Adam&#x27;s guidelines.</textarea>" in html and 'value="#123456"' in html  # the edit is kept
    assert 'href="?version=2"' in html and base_of(html) == "2"  # saving again is now a decision
    project.refresh_from_db()
    assert project.guidelines == "Bea's guidelines." and project.taxonomy["labels"][3]["description"] == (
        "Bea's wording.")
    assert list(project.label_set_versions.values_list("number", flat=True)) == [2, 1]

    again = login(admin_user).post(URL, form_of(mine, guidelines="Adam's guidelines.", base_version=base_of(html)))
    assert again.status_code == 302
    project.refresh_from_db()
    assert project.guidelines == "Adam's guidelines." and project.label_set_versions.count() == 3


@pytest.mark.django_db
def test_the_htmx_editor_gets_the_refusal_in_place(project: Project, admin_user: Any) -> None:
    labelsets.save_label_set(project, default_labels(), guidelines="Two.", author=admin_user)
    labelsets.save_label_set(project, default_labels(), guidelines="Three.", author=admin_user)
    response = login(admin_user).post(URL, form_of(default_labels(), guidelines="Mine.", base_version="1"), **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and "<html" not in html and 'id="label-editor"' in html
    assert "Version 3 was saved by adam at " in html and "(from version 1; version 2 came before it)" in html
    assert LabelSetVersion.objects.filter(project=project).count() == 3


@pytest.mark.django_db
def test_saving_from_the_current_version_works_as_before(project: Project, admin_user: Any) -> None:
    labelsets.save_label_set(project, default_labels(), guidelines="Two.", author=admin_user)
    client = login(admin_user)
    assert base_of(client.get(URL).content.decode()) == "2"
    assert client.post(URL, form_of(default_labels(), guidelines="Three.", base_version="2")).status_code == 302
    assert base_of(client.get(URL).content.decode()) == "3"


@pytest.mark.django_db
def test_restoring_an_old_version_is_based_on_the_current_one(project: Project, admin_user: Any) -> None:
    labelsets.save_label_set(project, default_labels(), guidelines="Two.", author=admin_user)
    client = login(admin_user)
    restoring = client.get(URL + "?edit_from=1").content.decode()
    assert base_of(restoring) == "2"  # what the restore replaces: a version 3 saved meanwhile refuses it
    assert client.post(URL, form_of(default_labels(), guidelines="", note="from version 1",
                                    base_version="2")).status_code == 302
    project.refresh_from_db()
    assert project.guidelines == "" and project.label_set_versions.count() == 3


@pytest.mark.django_db
def test_a_pairs_projects_guidelines_are_checked_the_same_way(admin_user: Any) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    labelsets.save_guidelines(pairs, guidelines="First own text.", author=admin_user, base_version=1)
    with pytest.raises(labelsets.LabelSetConflict, match=r"Version 2 was saved by adam at .* while you edited "
                                                         r"\(from version 1\)") as caught:
        labelsets.save_guidelines(pairs, guidelines="Other text.", author=admin_user, base_version=1)
    assert caught.value.current.number == 2
    pairs.refresh_from_db()
    assert pairs.guidelines == "First own text."


@pytest.mark.django_db
@pytest.mark.parametrize("base", [0, 3, "1", True, -1])
def test_a_base_version_that_is_no_version_is_refused(project: Project, admin_user: Any, base: Any) -> None:
    labelsets.save_label_set(project, default_labels(), guidelines="Two.", author=admin_user)
    with pytest.raises(labelsets.LabelSetError, match=r"base_version .* is not a version of this project's label "
                                                      r"set \(the current one is version 2\)"):
        labelsets.save_label_set(project, default_labels(), guidelines="Three.", base_version=base)
    assert LabelSetVersion.objects.filter(project=project).count() == 2


@pytest.mark.django_db
def test_a_form_with_a_garbled_base_version_saves_nothing(project: Project, admin_user: Any) -> None:
    response = login(admin_user).post(URL, form_of(default_labels(), guidelines="Mine.", base_version="v1"))
    assert response.status_code == 400 and "base_version &#x27;v1&#x27; is not a version" in response.content.decode()
    assert not LabelSetVersion.objects.exists()


# --- PostgreSQL: two saves racing -------------------------------------------------------------------------------


@needs_postgres
@pytest.mark.django_db(transaction=True)
def test_two_admins_saving_from_the_same_version_at_once_keep_one_save(project: Project, admin_user: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    bea = second_admin(project)
    # Between reading the current version and writing the next: without the project's lock both would pass.
    slowed(monkeypatch, labelsets, "labels_in_use")

    def save(user_id: int, guidelines: str) -> int:
        user = get_user_model().objects.get(pk=user_id)
        return labelsets.save_label_set(Project.objects.get(pk=project.pk), default_labels(),
                                        guidelines=guidelines, author=user, base_version=1).number

    outcome = race([lambda user=user, text=text: save(user.pk, text)
                    for user, text in [(admin_user, "Adam's."), (bea, "Bea's.")]], labelsets.LabelSetConflict)
    saved, refused = outcome.done, outcome.refused
    assert saved == [2] and len(refused) == 1 and "while you edited (from version 1)" in refused[0]
    assert sorted(LabelSetVersion.objects.filter(project=project).values_list("number", flat=True)) == [1, 2]
