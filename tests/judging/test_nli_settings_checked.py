"""NLI judge settings that cannot work are refused when the judge is saved (service, page form, API) and when it
runs, naming the field; a model id is found in the local Hugging Face cache, never downloaded.

Before:
- a classifier with two unnamed classes (LABEL_0, LABEL_1) and no consistent label was silently read as "class 1
  is consistent" (README said such a model is refused): a model trained the other way round scores 1 - p;
- Max tokens 512 on a model of 64 positions, or 40 tokens with an overlap of 32, were saved, and every sample of a
  run then failed as an "Endpoint or model error";
- a model id (DESIGN: "a local path or model id" from an already-filled cache) was refused: "is not a directory on
  this server".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from annotate.models import Project
from judging.models import Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import JudgeSettingsError, create_judge
from tests.conftest import login
from tests.judging.run_factories import add_samples
from tests.judging.tiny_nli import tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)

pytestmark = pytest.mark.django_db

MODEL_ID = "faithlab-tests/tiny-nli"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def edited_copy(tiny_nli_path: str, folder: Path, **config: Any) -> str:
    """The tiny model, whole, with its config.json (and tokenizer_config.json's model_max_length) edited."""
    shutil.copytree(tiny_nli_path, folder)
    tokenizer_max = config.pop("tokenizer_max", None)
    found = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps(found | config), encoding="utf-8")
    if tokenizer_max is not None:
        tokenizer = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer | {"model_max_length": tokenizer_max}))
    return str(folder)


UNNAMED = {"id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "label2id": {"LABEL_0": 0, "LABEL_1": 1}}


def refused(project: Project, field: str, **settings: Any) -> str:
    with pytest.raises(JudgeSettingsError) as caught:
        create_judge(project, name="nli", kind=Judge.Kind.NLI, **settings)
    assert field in caught.value.problems, caught.value.problems
    assert not Judge.objects.filter(name="nli").exists()
    return " ".join(caught.value.problems[field])


def run_of(project: Project, judge: Judge) -> JudgeRun:
    run = JudgeRun.objects.create(project=project, judge=judge, total=0)  # as a run started before the check
    return runs.execute_run(run.pk)


# ----------------------------------------------------------------------------- two unnamed classes


def test_two_unnamed_classes_are_refused_at_save_and_at_run_until_the_consistent_label_is_set(
    project: Project, tiny_nli_path: str, tmp_path: Path
) -> None:
    add_samples(project, 2)
    unnamed = edited_copy(tiny_nli_path, tmp_path / "unnamed", **UNNAMED)
    message = refused(project, "nli_consistent_label", nli_model_path=unnamed)
    assert "2 classes and none is named consistent / entailment / supported" in message
    assert "set the consistent label to the consistent class's name or index (0 or 1; HHEM-style" in message
    # A judge saved before this check (or whose folder got such a model since): no run starts, none executes.
    old = Judge.objects.create(project=project, name="old", kind=Judge.Kind.NLI, nli_model_path=unnamed)
    with pytest.raises(JudgeSettingsError) as at_start:
        runs.start_run(project, old, queue=False)
    assert at_start.value.field == "nli_consistent_label"
    ran = run_of(project, old)
    assert ran.status == JudgeRun.Status.FAILED and "none is named consistent" in ran.error
    assert not Judgement.objects.filter(run=ran).exists()
    # Named, it saves, runs, and the judges page says which class it reads.
    chosen = create_judge(project, name="chosen", kind=Judge.Kind.NLI, nli_model_path=unnamed,
                          nli_consistent_label="1")
    assert run_of(project, chosen).status == JudgeRun.Status.DONE
    named = create_judge(project, name="named", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    page = login_admin(project).get(f"/projects/{project.slug}/judges/").content.decode()
    assert f'<tr data-judge="{chosen.pk}">' in page
    row = page[page.index(f'<tr data-judge="{chosen.pk}">'):]
    assert 'data-role="consistent-class">consistent class: 1 (LABEL_1)' in row[:row.index("</tr>")]
    row = page[page.index(f'<tr data-judge="{named.pk}">'):]
    assert 'data-role="consistent-class">consistent class: 1 (consistent)' in row[:row.index("</tr>")]
    row = page[page.index(f'<tr data-judge="{old.pk}">'):]
    assert "no consistent class" in row[:row.index("</tr>")]


def login_admin(project: Project) -> Client:
    from annotate.models import Membership

    admin = Membership.objects.get(project=project, role=Membership.Role.ADMIN).user
    return login(admin)


# ----------------------------------------------------------------------------- windows the model cannot take


def test_max_tokens_beyond_the_models_positions_is_refused_at_save_by_service_form_and_api(
    project: Project, tiny_nli_path: str, tmp_path: Path
) -> None:
    small = edited_copy(tiny_nli_path, tmp_path / "small", max_position_embeddings=64, tokenizer_max=64)
    message = refused(project, "nli_max_length", nli_model_path=small, nli_max_length=512, nli_overlap=16)
    assert message == (f"Max tokens 512 is more than the model at {small!r} takes (64 tokens, from its config.json "
                       "and tokenizer_config.json): make it at most 64.")
    assert create_judge(project, name="fits", kind=Judge.Kind.NLI, nli_model_path=small, nli_max_length=64,
                        nli_overlap=16).nli_max_length == 64
    admin = login_admin(project)
    form = admin.post(f"/projects/{project.slug}/judges/new/nli/", {
        "nli-name": "form", "nli-nli_model_path": small, "nli-nli_max_length": 512, "nli-nli_overlap": 32,
        "nli-nli_batch_size": 8})
    assert form.status_code == 400 and "takes (64 tokens" in form.content.decode()
    api = admin.post(f"/api/projects/{project.slug}/judges/", {
        "name": "api", "kind": "nli", "nli_model_path": small, "nli_max_length": 512}, content_type="application/json")
    assert api.status_code == 400 and "64 tokens" in " ".join(api.json()["nli_max_length"])
    assert not Judge.objects.filter(name__in=["form", "api"]).exists()


def test_an_overlap_over_half_the_window_is_refused_at_save_and_fails_a_run_naming_the_setting(
    project: Project, tiny_nli_path: str
) -> None:
    add_samples(project, 3)
    message = refused(project, "nli_overlap", nli_model_path=tiny_nli_path, nli_max_length=40, nli_overlap=32)
    assert message.startswith("Window overlap (tokens) 32 is more than half of Max tokens 40")
    assert "Make it at most 20" in message
    # Saved before the check: the run fails before scoring, naming the setting, instead of an "Endpoint or model
    # error" per sample.
    old = Judge.objects.create(project=project, name="old", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path,
                               nli_max_length=40, nli_overlap=32)
    ran = run_of(project, old)
    assert ran.status == JudgeRun.Status.FAILED and ran.error.startswith("Window overlap (tokens) 32 is more than")
    assert not Judgement.objects.filter(run=ran).exists()


def test_an_output_too_long_for_a_window_is_not_called_an_endpoint_error(
    project: Project, tiny_nli_path: str
) -> None:
    from annotate.models import Sample
    from tests.judging.tiny_nli import reference_text

    samples = add_samples(project, 2)
    Sample.objects.filter(pk=samples[1].pk).update(summary=reference_text(600, seed=3))
    judge = create_judge(project, name="tiny", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    run = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
    failed = Judgement.objects.get(run=run, sample=samples[1])
    assert "raise the judge's “Max tokens” (up to what the model takes) or lower its “Window overlap (tokens)”" in (
        failed.error)
    page = login_admin(project).get(f"/projects/{project.slug}/judges/runs/{run.pk}/").content.decode()
    assert "Endpoint or model error" not in page
    assert "Not scored (too long for a window)" in page


# ----------------------------------------------------------------------------- a model id from the local cache


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


def cache_model(cache: Path, model_id: str, files_from: str) -> Path:
    """Lay a model into the cache as `hf download` does: refs/main names a snapshot folder holding its files."""
    repo = cache / f"models--{model_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / COMMIT
    shutil.copytree(files_from, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(COMMIT)
    return snapshot


def test_a_model_id_in_the_local_cache_is_accepted_and_runs_and_one_not_cached_is_refused_saying_so(
    project: Project, tiny_nli_path: str, hub_cache: Path
) -> None:
    add_samples(project, 2)
    message = refused(project, "nli_model_path", nli_model_path=MODEL_ID)
    assert message == (
        f"Model directory (on the server) {MODEL_ID!r} is not a directory on this server, and no model with that id "
        f"is in the local Hugging Face cache ({hub_cache}). FaithLab never downloads models: download it into that "
        f"cache first (`hf download {MODEL_ID}`, on this machine or on one with network whose cache you copy here; "
        "HF_HOME or HF_HUB_CACHE say where the cache is), or give the model's directory."
    )
    cache_model(hub_cache, MODEL_ID, tiny_nli_path)
    judge = create_judge(project, name="by id", kind=Judge.Kind.NLI, nli_model_path=MODEL_ID)
    assert judge.nli_model_path == MODEL_ID  # kept as given: the run finds it in the cache
    run = runs.execute_run(runs.start_run(project, judge, queue=False).pk)
    assert (run.status, run.scored) == (JudgeRun.Status.DONE, 2)
    page = login_admin(project).get(f"/projects/{project.slug}/judges/").content.decode()
    assert "consistent class: 1 (consistent)" in page
