"""Judge settings are checked field by field, keys are refused, prompts are versioned and runs record the version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from annotate.models import Batch, Project
from judging import prompts
from judging.labels import setting_label
from judging.models import Judge, JudgeRun, JudgingSettings, PromptVersion
from judging.services.judges import (
    JudgeSettingsError,
    PromptRefused,
    create_judge,
    current_prompt,
    endpoint_judge,
    save_prompt,
    update_judge,
    update_judging_settings,
)
from judging.services.runs import start_run

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:9/v1"
FAKE_KEY = "sk-proj-" + "Ab3dE" * 8


def refused(project: Project, field: str, **settings: Any) -> str:
    """Create a rubric judge with these settings; assert it is refused for `field` and nothing was written."""
    values = {"name": "j", "kind": Judge.Kind.RUBRIC, "base_url": URL, "model": "test-model"} | settings
    before = Judge.objects.count()
    with pytest.raises(JudgeSettingsError) as caught:
        create_judge(project, **values)
    assert caught.value.field == field, str(caught.value)
    assert str(caught.value).startswith(setting_label(field))  # named as the judges page labels it
    assert Judge.objects.count() == before
    return str(caught.value)


def test_a_rubric_judge_with_good_settings_is_created(project: Project) -> None:
    judge = create_judge(project, name="gpt", kind="rubric", base_url=URL + "/", model="test-model",
                         api_key_env="OPENAI_API_KEY", concurrency=256, timeout_seconds=0.5,
                         price_input_per_mtok=0, price_output_per_mtok=0.6)
    judge.refresh_from_db()
    assert (judge.base_url, judge.model, judge.api_key_env, judge.concurrency) == (URL, "test-model",
                                                                                   "OPENAI_API_KEY", 256)
    assert judge.price_output_per_mtok == 0.6 and judge.timeout_seconds == 0.5


@pytest.mark.parametrize("base_url", ["ftp://host/v1", "127.0.0.1:8000/v1", "", "http://", "http://user:pw@host/v1"])
def test_base_url_must_be_an_http_url_without_credentials(project: Project, base_url: str) -> None:
    refused(project, "base_url", base_url=base_url)


@pytest.mark.parametrize("model", ["", "   ", "m" * 201])
def test_model_must_be_named(project: Project, model: str) -> None:
    refused(project, "model", model=model)


@pytest.mark.parametrize("value", [
    FAKE_KEY,
    "sk-abc",
    "gsk_" + "x" * 40,
    "A" * 101,
    "MY KEY",
    "OPENAI-API-KEY",
    "9LIVES",
    "Xk29fLq83ZmQ0pRt7vWc2BnY",  # a random mixed-case token, shaped like a key
])
def test_api_key_env_refuses_anything_that_is_not_a_variable_name_and_never_echoes_it(
    project: Project, value: str
) -> None:
    message = refused(project, "api_key_env", api_key_env=value)
    assert value not in message
    assert "NAME of an environment variable" in message


@pytest.mark.parametrize("value", ["OPENAI_API_KEY", "openai_key", "_KEY2", ""])
def test_api_key_env_accepts_variable_names_and_blank(project: Project, value: str) -> None:
    judge = create_judge(project, name="j", kind="rubric", base_url=URL, model="test-model", api_key_env=value)
    assert judge.api_key_env == value


@pytest.mark.parametrize("value", [0, 257, -1, 2.5, "many", True])
def test_concurrency_is_a_whole_number_from_1_to_256(project: Project, value: Any) -> None:
    refused(project, "concurrency", concurrency=value)


@pytest.mark.parametrize("value", [0, -1, "soon", float("inf"), 601])
def test_timeout_must_be_more_than_zero(project: Project, value: Any) -> None:
    refused(project, "timeout_seconds", timeout_seconds=value)


@pytest.mark.parametrize("field", ["price_input_per_mtok", "price_output_per_mtok"])
def test_prices_cannot_be_negative(project: Project, field: str) -> None:
    refused(project, field, **{field: -0.01})


def test_unknown_and_misplaced_settings_are_refused(project: Project, tmp_path: Path) -> None:
    with pytest.raises(JudgeSettingsError) as misplaced:
        create_judge(project, name="j", kind="rubric", base_url=URL, model="m", nli_model_path=str(tmp_path))
    assert misplaced.value.problems == {"nli_model_path": ["A rubric judge has no setting 'nli_model_path'."]}
    with pytest.raises(JudgeSettingsError) as unknown:
        create_judge(project, name="j", kind="rubric", base_url=URL, model="m", temperature=0.7)
    assert unknown.value.problems == {"temperature": ["A rubric judge has no setting 'temperature'."]}
    assert not Judge.objects.exists()


def test_duplicate_name_is_refused_naming_the_field(project: Project) -> None:
    create_judge(project, name="gpt", kind="rubric", base_url=URL, model="test-model")
    message = refused(project, "name", name="gpt")
    assert "'gpt'" in message


def test_nli_path_must_be_an_existing_directory(project: Project, tmp_path: Path) -> None:
    a_file = tmp_path / "weights.bin"
    a_file.write_bytes(b"x")
    for path in ["", str(tmp_path / "missing"), str(a_file)]:
        with pytest.raises(JudgeSettingsError) as caught:
            create_judge(project, name="hhem", kind="nli", nli_model_path=path)
        assert caught.value.field == "nli_model_path"
    judge = create_judge(project, name="hhem", kind="nli", nli_model_path=str(tmp_path))
    assert judge.nli_model_path == str(tmp_path) and judge.nli_overlap == 32
    with pytest.raises(JudgeSettingsError) as caught:
        update_judge(judge, nli_overlap=600)
    assert caught.value.field == "nli_overlap"
    judge.refresh_from_db()
    assert judge.nli_overlap == 32


def test_update_checks_every_field_before_saving_any(project: Project) -> None:
    judge = create_judge(project, name="gpt", kind="rubric", base_url=URL, model="test-model")
    with pytest.raises(JudgeSettingsError):
        update_judge(judge, concurrency=8, base_url="nope")
    judge.refresh_from_db()
    assert judge.concurrency == 4 and judge.base_url == URL
    update_judge(judge, concurrency=8, name="gpt-8")
    judge.refresh_from_db()
    assert (judge.concurrency, judge.name) == (8, "gpt-8")


def test_endpoint_judge_is_reused_per_endpoint_model_and_mode(project: Project) -> None:
    first = endpoint_judge(project, base_url=URL, model="test-model")
    # The judge is shared: another concurrency is refused, naming it, unless asked to update.
    with pytest.raises(JudgeSettingsError, match="already exists.*--concurrency|already exists.*concurrency 4 -> 16"):
        endpoint_judge(project, base_url=URL + "/", model="test-model", concurrency=16)
    assert Judge.objects.get(pk=first.pk).concurrency == 4
    again = endpoint_judge(project, base_url=URL + "/", model="test-model", concurrency=16, update=True)
    score_only = endpoint_judge(project, base_url=URL, model="test-model", with_reasoning=False)
    elsewhere = endpoint_judge(project, base_url="http://127.0.0.1:10/v1", model="test-model")
    assert again.pk == first.pk and again.concurrency == 16
    assert first.name == "test-model (reasoning)" and score_only.name == "test-model (score only)"
    assert elsewhere.pk != first.pk and elsewhere.name == "test-model (reasoning) #2"
    assert Judge.objects.filter(project=project).count() == 3


def test_prompt_starts_at_the_default_and_an_edit_makes_version_two(project: Project) -> None:
    first = current_prompt(project, "rubric")
    assert (first.number, first.text) == (1, prompts.DEFAULT_RUBRIC)
    edited = save_prompt(project, "rubric", prompts.DEFAULT_RUBRIC + "\nBe strict about numbers.\n", note="strict")
    assert edited.number == 2 and current_prompt(project, "rubric").pk == edited.pk
    # The same text again (trailing blanks and Windows line ends aside) makes no new version.
    same = save_prompt(project, "rubric", edited.text.replace("\n", "\r\n") + "  \n")
    assert same.pk == edited.pk
    assert PromptVersion.objects.filter(project=project, kind="rubric").count() == 2


def test_rubric_without_a_score_scale_is_refused_and_no_version_is_made(project: Project) -> None:
    with pytest.raises(PromptRefused) as caught:
        save_prompt(project, "rubric", "Judge whether the output is faithful. Be careful.")
    assert "score scale" in str(caught.value)
    with pytest.raises(PromptRefused) as caught:
        save_prompt(project, "rubric", "1 - bad\n2 - poor\n4 - good\n5 - great\n")
    assert "score 3" in str(caught.value)
    # Nothing at all: not even version 1, the default a first save records before the edited text.
    assert not PromptVersion.objects.filter(project=project).exists()


def test_rewrite_prompt_must_keep_its_placeholders(project: Project) -> None:
    with pytest.raises(PromptRefused) as caught:
        save_prompt(project, "intrinsic", "Rewrite {sentence} of {output}.")
    assert "{source}" in str(caught.value)
    assert save_prompt(project, "intrinsic", "Source {source}; output {output}; change {sentence}.").number == 2


def test_runs_record_the_rubric_version_they_use(project: Project, batch: Batch) -> None:
    judge = create_judge(project, name="gpt", kind="rubric", base_url=URL, model="test-model")
    before = start_run(project, judge, queue=False)
    save_prompt(project, "rubric", prompts.DEFAULT_RUBRIC + "\nQuote the source.")
    after = start_run(project, judge, queue=False)
    assert before.rubric.number == 1 and after.rubric.number == 2
    assert after.total == 3


def test_start_run_refuses_a_missing_key_variable_naming_it_and_writes_nothing(
    project: Project, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FAITHLAB_TEST_MISSING_KEY", raising=False)
    judge = create_judge(project, name="gpt", kind="rubric", base_url=URL, model="test-model",
                         api_key_env="FAITHLAB_TEST_MISSING_KEY")
    with pytest.raises(JudgeSettingsError) as caught:
        start_run(project, judge, queue=False)
    assert caught.value.field == "api_key_env" and "FAITHLAB_TEST_MISSING_KEY" in str(caught.value)
    assert not JudgeRun.objects.exists()


def test_triage_settings_are_checked(project: Project, tmp_path: Path) -> None:
    llm = create_judge(project, name="gpt", kind="rubric", base_url=URL, model="test-model")
    score_only = create_judge(project, name="mini", kind="rubric", base_url=URL, model="test-model",
                              with_reasoning=False)
    nli = create_judge(project, name="hhem", kind="nli", nli_model_path=str(tmp_path))
    with pytest.raises(JudgeSettingsError) as caught:
        update_judging_settings(project, explainer=nli)
    assert caught.value.field == "explainer"
    with pytest.raises(JudgeSettingsError) as caught:
        update_judging_settings(project, explainer=score_only)
    assert caught.value.field == "explainer"
    with pytest.raises(JudgeSettingsError) as caught:
        update_judging_settings(project, first_pass=nli, llm_flag_at_most=6)
    assert caught.value.field == "llm_flag_at_most"
    assert JudgingSettings.objects.get(project=project).first_pass is None  # nothing saved
    saved = update_judging_settings(project, first_pass=nli.pk, explainer=llm, nli_flag_below=0.4)
    assert (saved.first_pass, saved.explainer, saved.nli_flag_below, saved.llm_flag_at_most) == (nli, llm, 0.4, 3)
