"""A BERT given where the GPT-2 belongs (or the other way round) is refused before anything is written.

Before: transformers loaded the BERT masked LM as a "causal LM" (BertLMHeadModel), the job started and
crashed on the first text with an AttributeError deep in the perplexity code (a traceback in
``perturb_pairs``); a GPT-2 as the masked LM started a job that failed with transformers' list of some
fifty model classes. Now config.json's saved architecture is read (no model loaded) and the page, the
command and the job name the setting, the path and what it holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.checkpoints import CAUSAL_LM_HEADS, MASKED_LM_HEADS, CheckpointProblem, read_checkpoint, require_head
from annotate.models import Job, PairOriginal, PerturbedText, Project
from annotate.perturbation.models import (
    CAUSAL_HINT,
    MASKED_HINT,
    PerturbationModelError,
    forget_models,
    load_causal_lm,
    load_masked_lm,
)
from annotate.services.pairs import perturb
from annotate.services.pairs.config import get_config, missing_model_settings
from tests.pairs.factories_perturbation import TEXTS, build_tiny_models


@pytest.fixture(scope="module")
def model_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return build_tiny_models(tmp_path_factory.mktemp("review4-models"))


@pytest.fixture
def waiting_project(pairs_project: Project) -> Project:
    for index, text in enumerate(TEXTS):
        PairOriginal.objects.create(project=pairs_project, external_id=f"t{index}", text=text)
    return pairs_project


def write_config(folder: Path, config: object) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


# --- the pure reader -----------------------------------------------------------------------------------------------


def test_the_saved_architecture_tells_a_masked_lm_from_a_causal_lm(model_dirs: tuple[Path, Path]) -> None:
    bert, gpt2 = (str(path) for path in model_dirs)
    assert read_checkpoint(bert).architectures == ("BertForMaskedLM",)
    assert read_checkpoint(gpt2).architectures == ("GPT2LMHeadModel",)
    assert require_head(bert, MASKED_LM_HEADS, "a masked LM").model_type == "bert"
    assert require_head(gpt2, CAUSAL_LM_HEADS, "a causal LM").model_type == "gpt2"
    with pytest.raises(CheckpointProblem, match=r"^holds BertForMaskedLM, not a causal LM$"):
        require_head(bert, CAUSAL_LM_HEADS, "a causal LM")
    with pytest.raises(CheckpointProblem, match=r"^holds GPT2LMHeadModel, not a masked LM$"):
        require_head(gpt2, MASKED_LM_HEADS, "a masked LM")


def test_a_config_without_architectures_is_left_to_the_loader_and_a_broken_one_is_named(tmp_path: Path) -> None:
    assert require_head(write_config(tmp_path / "bare", {"model_type": "bert"}), CAUSAL_LM_HEADS, "x").architectures == ()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CheckpointProblem, match="not readable JSON"):
        read_checkpoint(str(broken))
    with pytest.raises(CheckpointProblem, match="not a JSON object"):
        read_checkpoint(write_config(tmp_path / "list", ["BertForMaskedLM"]))
    with pytest.raises(CheckpointProblem, match="no config.json"):
        read_checkpoint(str(tmp_path))
    note = tmp_path / "note.txt"
    note.write_text("not a model")
    with pytest.raises(CheckpointProblem, match="is not a directory on this server"):
        read_checkpoint(str(note))


# --- loading (the worker's path) --------------------------------------------------------------------------------


def test_loading_the_swapped_models_names_the_setting_the_path_and_what_it_holds(
    model_dirs: tuple[Path, Path],
) -> None:
    bert, gpt2 = (str(path) for path in model_dirs)
    forget_models()
    with pytest.raises(PerturbationModelError) as causal:
        load_causal_lm(bert)
    assert str(causal.value) == (
        f"The causal LM path {bert!r} holds BertForMaskedLM, not a causal LM (GPT-2-style, e.g. GPT2LMHeadModel). "
        f"{CAUSAL_HINT}"
    )
    with pytest.raises(PerturbationModelError) as masked:
        load_masked_lm(gpt2)
    assert str(masked.value) == (
        f"The masked LM path {gpt2!r} holds GPT2LMHeadModel, not a masked LM (BERT-style, e.g. BertForMaskedLM). "
        f"{MASKED_HINT}"
    )


# --- the page, the service and the command refuse before writing ------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("swap", ["bert-as-causal", "gpt2-as-masked"])
def test_swapped_models_start_no_job_and_the_command_says_why_without_a_traceback(
    waiting_project: Project, model_dirs: tuple[Path, Path], settings: Any, swap: str
) -> None:
    bert, gpt2 = (str(path) for path in model_dirs)
    settings.PAIRS_SPACY_PIPELINE = ""
    if swap == "bert-as-causal":
        settings.PAIRS_MASKED_LM, settings.PAIRS_CAUSAL_LM = bert, bert
        expected = (f"The causal LM path {bert!r} (PAIRS_CAUSAL_LM) holds BertForMaskedLM, not a causal LM "
                    f"(GPT-2-style, e.g. GPT2LMHeadModel). {CAUSAL_HINT}")
    else:
        settings.PAIRS_MASKED_LM, settings.PAIRS_CAUSAL_LM = gpt2, gpt2
        expected = (f"The masked LM path {gpt2!r} (PAIRS_MASKED_LM) holds GPT2LMHeadModel, not a masked LM "
                    f"(BERT-style, e.g. BertForMaskedLM). {MASKED_HINT}")
    assert missing_model_settings(waiting_project) == [expected]
    with pytest.raises(perturb.PerturbationError) as refused:
        perturb.start_perturbation(waiting_project, None, queue=False)
    assert str(refused.value) == expected
    with pytest.raises(CommandError) as command:
        call_command("perturb_pairs", "--project", waiting_project.slug, "--seed", "1")
    assert str(command.value) == f"perturbation not started: {expected}"
    assert not Job.objects.filter(kind=Job.Kind.PERTURB).exists()
    assert not PerturbedText.objects.exists()
    assert not PairOriginal.objects.filter(perturbed_at__isnull=False).exists()


@pytest.mark.django_db
def test_the_projects_own_swapped_path_is_named_as_the_projects_setting(
    waiting_project: Project, model_dirs: tuple[Path, Path], settings: Any
) -> None:
    bert, gpt2 = (str(path) for path in model_dirs)
    settings.PAIRS_MASKED_LM, settings.PAIRS_CAUSAL_LM, settings.PAIRS_SPACY_PIPELINE = bert, gpt2, ""
    assert missing_model_settings(waiting_project) == []
    config = get_config(waiting_project)
    config.causal_lm = bert
    config.save()
    assert missing_model_settings(waiting_project) == [
        f"The causal LM path {bert!r} (the project's setting) holds BertForMaskedLM, not a causal LM "
        f"(GPT-2-style, e.g. GPT2LMHeadModel). {CAUSAL_HINT}"
    ]


@pytest.mark.django_db
def test_a_job_queued_before_the_path_changed_fails_with_the_message_and_writes_nothing(
    waiting_project: Project, model_dirs: tuple[Path, Path], settings: Any
) -> None:
    bert, gpt2 = (str(path) for path in model_dirs)
    settings.PAIRS_MASKED_LM, settings.PAIRS_CAUSAL_LM, settings.PAIRS_SPACY_PIPELINE = bert, gpt2, ""
    job = perturb.start_perturbation(waiting_project, None, queue=False)
    settings.PAIRS_CAUSAL_LM = bert  # changed while the job waited in the queue
    forget_models()
    finished = perturb.run_perturbation_job(job.pk)
    assert finished.status == Job.Status.FAILED and finished.done == 0
    assert finished.error == (f"The causal LM path {bert!r} (PAIRS_CAUSAL_LM) holds BertForMaskedLM, not a causal "
                              f"LM (GPT-2-style, e.g. GPT2LMHeadModel). {CAUSAL_HINT}")
    assert not PerturbedText.objects.exists()
