"""Refusals to start a judge run read as sentences: a capital first, the judge named as "Judge 'name'" as the
neighbouring refusals name it (an NLI judge's model problem used to read "judge 'x': ..."), and nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from annotate.models import Batch, Project
from judging.models import Judge, JudgeRun
from judging.services import runs
from judging.services.judges import JudgeSettingsError
from tests.judging.audit_helpers import make_judge

pytestmark = pytest.mark.django_db

KEY_VARIABLE = "FAITHLAB_TEST_START_MESSAGES_KEY"


def refusal(start: Callable[[], Any]) -> JudgeSettingsError:
    with pytest.raises(JudgeSettingsError) as caught:
        start()
    assert not JudgeRun.objects.exists()
    return caught.value


def test_refusals_about_the_judge_name_it_at_the_start_with_a_capital(project: Project, batch: Batch) -> None:
    other = Project.objects.create(name="Other", slug="other")
    elsewhere = make_judge(other, "elsewhere")
    imported = make_judge(project, "imported", kind=Judge.Kind.IMPORTED)
    nli = make_judge(project, "hhem", kind=Judge.Kind.NLI, nli_model_path="/nonexistent/faithlab-model")

    assert str(refusal(lambda: runs.start_run(project, elsewhere, queue=False))) == (
        "Judge 'elsewhere' belongs to another project."
    )
    assert str(refusal(lambda: runs.start_run(project, imported, queue=False))) == (
        "Judge 'imported' holds imported outputs; it cannot be run."
    )
    assert str(refusal(lambda: runs.start_run(project, nli, ask_again=True, queue=False))).startswith(
        "Judge 'hhem' is not a rubric LLM judge ("
    )
    model = refusal(lambda: runs.start_run(project, nli, queue=False))
    assert model.field == "nli_model_path"
    assert str(model).startswith("Judge 'hhem' cannot be run: Model directory (on the server) ")
    assert "judge 'hhem':" not in str(model)


def test_an_unset_key_variable_is_a_sentence_naming_the_judge(
    project: Project, batch: Batch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    rubric = make_judge(project, "gpt", api_key_env=KEY_VARIABLE)
    refused = refusal(lambda: runs.start_run(project, rubric, queue=False))
    assert refused.field == "api_key_env"
    assert str(refused).startswith(f"The environment variable {KEY_VARIABLE} (the API key variable of judge 'gpt') ")


@pytest.mark.parametrize(("options", "field", "message"), [
    ({"scope": "nowhere"}, "scope", "The scope must be all, batch, flagged or synthetic, not 'nowhere'."),
    ({"purpose": "fun"}, "purpose", "The purpose must be plain, first_pass or explain, not 'fun'."),
    ({"scope": JudgeRun.Scope.BATCH}, "batch", "A batch run needs the batch."),
    ({"scope": JudgeRun.Scope.SYNTHETIC}, "synthetic_set", "A synthetic run needs a synthetic set of this project."),
])
def test_refusals_about_the_scope_start_with_a_capital(
    project: Project, batch: Batch, options: dict[str, Any], field: str, message: str
) -> None:
    judge = make_judge(project, "gpt")
    refused = refusal(lambda: runs.start_run(project, judge, queue=False, **options))
    assert (refused.field, str(refused)) == (field, message)


def test_a_batch_or_project_of_the_wrong_kind_starts_with_a_capital(project: Project, batch: Batch) -> None:
    other = Project.objects.create(name="Other", slug="other")
    foreign = Batch.objects.create(project=other, name="theirs")
    judge = make_judge(project, "gpt")
    refused = refusal(lambda: runs.start_run(project, judge, scope=JudgeRun.Scope.BATCH, batch=foreign, queue=False))
    assert str(refused) == "Batch 'theirs' belongs to another project."
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    refused = refusal(lambda: runs.start_run(pairs, make_judge(pairs, "gpt"), queue=False))
    assert str(refused).startswith("Project 'pairs' is a pairs project: judges score span projects")
