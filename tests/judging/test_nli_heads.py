"""An NLI judge refuses a directory that holds another kind of model, or a classifier with no consistent class.

Before: any directory was accepted; a BERT masked LM (or a GPT-2) loaded through
AutoModelForSequenceClassification with a freshly initialised, random classifier head and the run
scored every sample with meaningless p (here it failed only because the tiny models have few
positions); a three-class classifier with unnamed labels was accepted and failed only on the worker.
Now config.json's architecture and labels are read when the judge is created, when a run starts, and
when the worker loads the model; each refusal names the field and the path, and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotate.models import Project
from judging.clients import ModelSettingError, load_nli_model
from judging.models import Judge, Judgement, JudgeRun
from judging.services import runs
from judging.services.judges import JudgeSettingsError, create_judge, update_judge
from tests.judging.run_factories import add_samples
from tests.judging.tiny_nli import tiny_nli_fixture  # noqa: F401  (the tiny_nli_path fixture)
from tests.pairs.factories_perturbation import build_causal_lm, build_masked_lm

NOT_A_CLASSIFIER = "not a sequence-classification model (NLI, HHEM-style)"


@pytest.fixture(scope="module")
def language_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("review4-lms")
    return str(build_masked_lm(folder / "bert")), str(build_causal_lm(folder / "gpt2"))


def three_class_copy(tiny_nli_path: str, folder: Path, labels: dict[str, str]) -> str:
    """The tiny NLI model's config.json with three classes (all a judge reads before the worker loads it)."""
    config = json.loads((Path(tiny_nli_path) / "config.json").read_text(encoding="utf-8"))
    config["id2label"] = labels
    config["label2id"] = {name: int(index) for index, name in labels.items()}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return str(folder)


def refused_nli(project: Project, field: str, **settings: Any) -> str:
    before = Judge.objects.count()
    with pytest.raises(JudgeSettingsError) as caught:
        create_judge(project, name="nli", kind=Judge.Kind.NLI, **settings)
    assert caught.value.field == field, str(caught.value)
    assert Judge.objects.count() == before
    return str(caught.value)


@pytest.mark.django_db
def test_a_masked_lm_or_a_gpt2_is_refused_as_an_nli_model_naming_the_path(
    project: Project, language_models: tuple[str, str]
) -> None:
    bert, gpt2 = language_models
    assert refused_nli(project, "nli_model_path", nli_model_path=bert) == (
        f"Model directory (on the server) {bert!r} holds BertForMaskedLM, {NOT_A_CLASSIFIER}."
    )
    assert refused_nli(project, "nli_model_path", nli_model_path=gpt2) == (
        f"Model directory (on the server) {gpt2!r} holds GPT2LMHeadModel, {NOT_A_CLASSIFIER}."
    )


@pytest.mark.django_db
def test_a_three_class_model_needs_its_consistent_class_named(
    project: Project, tiny_nli_path: str, tmp_path: Path
) -> None:
    unnamed = three_class_copy(tiny_nli_path, tmp_path / "unnamed", {"0": "LABEL_0", "1": "LABEL_1", "2": "LABEL_2"})
    message = refused_nli(project, "nli_consistent_label", nli_model_path=unnamed)
    assert message == (
        f"the model at {unnamed!r} has 3 classes and none is named consistent / entailment / supported: set "
        "the consistent label to the consistent class's name or index."
    )
    assert "is not a class" in refused_nli(
        project, "nli_consistent_label", nli_model_path=unnamed, nli_consistent_label="entailment"
    )
    judge = create_judge(project, name="nli", kind=Judge.Kind.NLI, nli_model_path=unnamed, nli_consistent_label="2")
    assert judge.nli_consistent_label == "2"
    named = three_class_copy(tiny_nli_path, tmp_path / "named",
                             {"0": "contradiction", "1": "neutral", "2": "entailment"})
    assert create_judge(project, name="mnli", kind=Judge.Kind.NLI, nli_model_path=named).nli_model_path == named


@pytest.mark.django_db
def test_pointing_a_judge_at_a_language_model_is_refused_and_keeps_its_path(
    project: Project, tiny_nli_path: str, language_models: tuple[str, str]
) -> None:
    judge = create_judge(project, name="nli", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    with pytest.raises(JudgeSettingsError) as caught:
        update_judge(judge, nli_model_path=language_models[1])
    assert caught.value.field == "nli_model_path"
    judge.refresh_from_db()
    assert judge.nli_model_path == tiny_nli_path


@pytest.mark.django_db
def test_a_judge_whose_directory_became_a_language_model_starts_no_run(
    project: Project, language_models: tuple[str, str]
) -> None:
    add_samples(project, 2)
    # Saved before the check existed (or edited in the admin): the run is refused, nothing is written.
    judge = Judge.objects.create(project=project, name="old", kind=Judge.Kind.NLI, nli_model_path=language_models[0])
    with pytest.raises(JudgeSettingsError) as caught:
        runs.start_run(project, judge, queue=False)
    assert caught.value.field == "nli_model_path"
    assert str(caught.value) == (
        f"Judge 'old' cannot be run: Model directory (on the server) {language_models[0]!r} holds BertForMaskedLM, "
        f"{NOT_A_CLASSIFIER}."
    )
    assert not JudgeRun.objects.exists()


@pytest.mark.django_db
def test_the_worker_fails_the_run_rather_than_score_with_a_random_head(
    project: Project, tiny_nli_path: str, language_models: tuple[str, str]
) -> None:
    add_samples(project, 2)
    judge = create_judge(project, name="nli", kind=Judge.Kind.NLI, nli_model_path=tiny_nli_path)
    run = runs.start_run(project, judge, queue=False)
    Judge.objects.filter(pk=judge.pk).update(nli_model_path=language_models[0])  # changed while it was queued
    finished = runs.execute_run(run.pk, follow_up=False)
    assert finished.status == JudgeRun.Status.FAILED
    assert finished.error == f"Model directory (on the server) {language_models[0]!r} holds BertForMaskedLM, {NOT_A_CLASSIFIER}."
    assert not Judgement.objects.filter(run=run).exists()
    with pytest.raises(ModelSettingError) as caught:
        load_nli_model(language_models[1])
    assert caught.value.setting == "nli_model_path" and "holds GPT2LMHeadModel" in str(caught.value)
