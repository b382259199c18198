"""Which model directories a project admin who is not site staff may give an NLI judge: the id of a model in the local
Hugging Face cache, or a directory that, resolved (symlinks and .. followed), lies inside FAITHLAB_NLI_MODEL_DIRS (by
default that cache and FAITHLAB_DATA_DIR/models). Any other path gets one refusal naming the setting, the same whether
the path exists or not; site staff and management commands (services called with no user) may name any directory.

Before: any path on the server was accepted from a project admin, and the refusals told whether it existed and held a
config.json; the worker then loaded whatever directory was named.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from annotate.models import Membership, Project
from judging.models import Judge
from judging.services.judges import JudgeSettingsError, create_judge
from tests.conftest import login, make_user
from tests.judging.tiny_nli import tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)

pytestmark = pytest.mark.django_db

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def pam(project: Project) -> Any:
    """A project admin who is not site staff."""
    user = make_user("pam")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache of this test's own (HF_HUB_CACHE), with the hub switched off."""
    from huggingface_hub import constants

    cache = tmp_path / "hf-cache"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache


@pytest.fixture
def models(settings: Any, hub_cache: Path) -> Path:
    """FAITHLAB_DATA_DIR/models, allowed by default (FAITHLAB_NLI_MODEL_DIRS empty) with this test's HF cache."""
    settings.FAITHLAB_NLI_MODEL_DIRS = ()
    folder = Path(settings.DATA_DIR) / "models"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def outside(tmp_path: Path, tiny_nli_path: str) -> Path:
    """A working NLI model in a folder no setting allows."""
    folder = tmp_path / "elsewhere" / "model"
    shutil.copytree(tiny_nli_path, folder)
    return folder


def expected_refusal(*folders: Path) -> str:
    shown = ", ".join(str(folder) for folder in folders)
    return ("Model directory (on the server): a project admin may give only the id of a model in the local Hugging "
            f"Face cache, or a model directory inside the folders an operator allows in FAITHLAB_NLI_MODEL_DIRS "
            f"({shown}). An operator copies the model there (or sets FAITHLAB_NLI_MODEL_DIRS in the environment of "
            "the web server and the worker), or site staff create the judge.")


def page_post(client: Client, project: Project, path: str, name: str = "probe") -> Any:
    return client.post(reverse("judging-judge-create", args=[project.slug, "nli"]), {
        "nli-name": name, "nli-nli_model_path": path, "nli-nli_consistent_label": "", "nli-nli_max_length": "512",
        "nli-nli_overlap": "32", "nli-nli_batch_size": "8"})


def api_post(client: Client, project: Project, path: str, name: str = "probe") -> Any:
    return client.post(f"/api/projects/{project.slug}/judges/", {"name": name, "kind": "nli", "nli_model_path": path},
                       content_type="application/json")


def refusals(client: Client, project: Project, path: str) -> tuple[str, str]:
    """The page's and the API's answer to ``path``: both 400, nothing saved; the API's message, and the page."""
    page = page_post(client, project, path)
    answer = api_post(client, project, path)
    assert page.status_code == 400, path
    assert answer.status_code == 400 and set(answer.json()) == {"nli_model_path"}, (path, answer.json())
    assert not Judge.objects.exists()
    return answer.json()["nli_model_path"][0], page.content.decode()


def test_a_project_admin_is_refused_paths_outside_the_allowed_folders_with_one_message_whether_they_exist_or_not(
    project: Project, pam: Any, models: Path, hub_cache: Path, outside: Path
) -> None:
    (models / "escape").symlink_to(outside, target_is_directory=True)
    (models / "dangling").symlink_to(outside.parent / "no-such-model")
    paths = [
        "/etc", "/etc/faithlab-no-such-folder", "/root", "~",
        str(outside), str(outside.parent / "no-such-model"),  # a working model, and a folder that is not there
        f"{models}/../../elsewhere/model", f"{models}/../../elsewhere/no-such-model",  # .. out of an allowed folder
        str(models / "escape"), str(models / "escape" / "config.json"), str(models / "dangling"),  # symlinks out
    ]
    client = login(pam)
    expected = expected_refusal(hub_cache, models)
    for path in paths:
        message, page = refusals(client, project, path)
        assert message == expected, path
        assert "FAITHLAB_NLI_MODEL_DIRS" in page and "not a directory" not in page and "config.json" not in message


def test_a_model_id_is_taken_from_the_cache_only_never_from_a_folder_of_that_name_beside_the_server(
    project: Project, pam: Any, models: Path, hub_cache: Path, outside: Path, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(outside.parent.parent)  # "elsewhere/model" reads as a model id and is a folder from here
    client = login(pam)
    assert refusals(client, project, "elsewhere/model")[0] == expected_refusal(hub_cache, models)
    assert refusals(client, project, "faithlab-tests/not-cached")[0] == expected_refusal(hub_cache, models)
    repo = hub_cache / "models--faithlab-tests--tiny-nli"
    shutil.copytree(outside, repo / "snapshots" / COMMIT)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    assert api_post(client, project, "faithlab-tests/tiny-nli").status_code == 201


def test_the_same_model_is_refused_outside_and_accepted_inside_data_dir_models_by_page_and_api(
    project: Project, pam: Any, models: Path, outside: Path
) -> None:
    client = login(pam)
    refusals(client, project, str(outside))
    inside = models / "tiny"
    shutil.copytree(outside, inside)
    (models / "alias").symlink_to(inside, target_is_directory=True)  # a symlink that stays inside is fine
    assert page_post(client, project, str(inside), name="by page").status_code == 302
    assert api_post(client, project, str(models / "alias"), name="by api").status_code == 201
    assert api_post(client, project, f"{models}/alias/../tiny", name="dotted").status_code == 201
    assert set(Judge.objects.values_list("nli_model_path", flat=True)) == {
        str(inside), str(models / "alias"), f"{models}/alias/../tiny"}  # kept as given


def test_faithlab_nli_model_dirs_replaces_the_default_folders(
    project: Project, pam: Any, models: Path, outside: Path, settings: Any
) -> None:
    shutil.copytree(outside, models / "tiny")
    settings.FAITHLAB_NLI_MODEL_DIRS = (outside.parent,)
    client = login(pam)
    assert api_post(client, project, str(outside)).status_code == 201
    answer = api_post(client, project, str(models / "tiny"), name="other")
    assert answer.status_code == 400 and answer.json()["nli_model_path"] == [expected_refusal(outside.parent)]


def test_site_staff_may_use_any_directory(
    project: Project, pam: Any, admin_user: Any, models: Path, outside: Path
) -> None:
    refusals(login(pam), project, str(outside))
    assert page_post(login(admin_user), project, str(outside)).status_code == 302
    superuser = make_user("root", is_superuser=True)
    Membership.objects.create(project=project, user=superuser, role=Membership.Role.ADMIN)
    assert api_post(login(superuser), project, str(outside), name="by root").status_code == 201


def test_management_commands_may_use_any_directory(project: Project, pam: Any, models: Path, outside: Path) -> None:
    """Commands and the shell call the services with no user (by=None): an operator."""
    with pytest.raises(JudgeSettingsError) as refused:
        create_judge(project, name="pam's", kind=Judge.Kind.NLI, nli_model_path=str(outside), by=pam)
    assert "FAITHLAB_NLI_MODEL_DIRS" in str(refused.value)
    assert create_judge(project, name="operator's", kind=Judge.Kind.NLI, nli_model_path=str(outside)).pk


def test_a_project_admin_edits_a_staff_judge_keeping_its_path_but_cannot_move_it_outside(
    project: Project, pam: Any, admin_user: Any, models: Path, hub_cache: Path, outside: Path
) -> None:
    judge = create_judge(project, name="staff's", kind=Judge.Kind.NLI, nli_model_path=str(outside), by=admin_user)
    url = reverse("judging-judge-update", args=[project.slug, judge.pk])
    prefix = f"judge-{judge.pk}-"
    fields = {prefix + "name": "renamed", prefix + "nli_model_path": str(outside), prefix + "nli_consistent_label": "",
              prefix + "nli_max_length": "512", prefix + "nli_overlap": "32", prefix + "nli_batch_size": "8"}
    assert login(pam).post(url, fields).status_code == 302
    judge.refresh_from_db()
    assert judge.name == "renamed"
    other = outside.parent / "other"
    shutil.copytree(outside, other)
    moved = login(pam).post(url, fields | {prefix + "nli_model_path": str(other)})
    assert moved.status_code == 400 and "FAITHLAB_NLI_MODEL_DIRS" in moved.content.decode()
    judge.refresh_from_db()
    assert judge.nli_model_path == str(outside)


def test_the_setting_reads_absolute_folders_and_refuses_a_relative_one_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from config.env import SettingError, envfolders

    monkeypatch.delenv("FAITHLAB_NLI_MODEL_DIRS", raising=False)
    assert envfolders("FAITHLAB_NLI_MODEL_DIRS") == ()
    monkeypatch.setenv("FAITHLAB_NLI_MODEL_DIRS", " /srv/models, ,/data/hub ")
    assert envfolders("FAITHLAB_NLI_MODEL_DIRS") == (Path("/srv/models"), Path("/data/hub"))
    monkeypatch.setenv("FAITHLAB_NLI_MODEL_DIRS", "/srv/models,models")
    with pytest.raises(SettingError, match="FAITHLAB_NLI_MODEL_DIRS=.*'models' is not an absolute folder"):
        envfolders("FAITHLAB_NLI_MODEL_DIRS")
