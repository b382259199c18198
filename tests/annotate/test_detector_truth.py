"""The human truth of detector evaluation is configurable (DESIGN.md: "hallucinated when the worst label is U or Q
(configurable)"): ``hallucinated`` = U, UQ (the default) or UQB on the ``detector_eval`` command, the detector-eval
API and the results page, the judges scored against the same truth, and the kept page figures keyed on it.

The scene (tests/annotate/results_scene.py): worst labels s0 U, s1 Q, s2 U, t0 U, t1 B, t2 Q, t3 C; hhem gives
0.2 0.8 0.9 0.7 0.3 0.6 0.1 (consistent at >= 0.5), gpt the verdicts 1 1 0 0 0 1 1.
"""

from __future__ import annotations

import io
import json
from html import unescape
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from sklearn.metrics import balanced_accuracy_score, f1_score

from annotate.models import FigureSet
from annotate.services import stats
from judging.models import Judge, Judgement, JudgeRun
from tests.annotate.results_scene import tags
from tests.conftest import login

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("empty_cache", "quick_passwords")]

WORST = ["U", "Q", "U", "U", "B", "Q", "C"]  # s0 s1 s2 t0 t1 t2 t3
HHEM = [0, 1, 1, 1, 0, 1, 0]  # 1 = predicted consistent: hhem >= 0.5
GPT = [1, 1, 0, 0, 0, 1, 1]
JUDGE_SCORES = [2, 5, 4, 1, 4, 3, 5]  # a rubric judge: consistent at 4 or more
JUDGE = [0, 1, 1, 0, 1, 0, 1]
TRUTHS = {"U": {"U"}, "UQ": {"U", "Q"}, "UQB": {"U", "Q", "B"}}


def by_hand(predicted: list[int], hallucinated: str) -> dict[str, float]:
    truth = [0 if worst in TRUTHS[hallucinated] else 1 for worst in WORST]
    return {"balanced_accuracy": round(100 * balanced_accuracy_score(truth, predicted), 2),
            "f1_macro": round(100 * f1_score(truth, predicted, average="macro", zero_division=0), 2)}


def expected(hallucinated: str) -> dict[str, dict[str, float]]:
    return {"hhem": by_hand(HHEM, hallucinated), "gpt": by_hand(GPT, hallucinated),
            "judge:llm": by_hand(JUDGE, hallucinated)}


def figures_of(report: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {name: {metric: row[metric] for metric in ("balanced_accuracy", "f1_macro")}
            for name, row in report.items()}


@pytest.fixture
def judged(scene: dict[str, Any]) -> dict[str, Any]:
    judge = Judge.objects.create(project=scene["project"], name="llm", kind=Judge.Kind.RUBRIC,
                                 base_url="http://127.0.0.1:9/v1", model="m")
    run = JudgeRun.objects.create(project=scene["project"], judge=judge, status=JudgeRun.Status.DONE)
    for sample, score in zip([*scene["s"], *scene["t"]], JUDGE_SCORES, strict=True):
        Judgement.objects.create(run=run, sample=sample, status="ok", score=score)
    return scene


def test_the_hand_made_case_tells_the_three_truths_apart() -> None:
    # Otherwise the tests below would pass whatever truth the code used.
    figures = [expected(name) for name in TRUTHS]
    for detector in ("hhem", "gpt", "judge:llm"):
        assert len({json.dumps(each[detector]) for each in figures}) == 3


def test_the_worst_labels_are_the_ones_the_figures_are_worked_out_from(scene: dict[str, Any]) -> None:
    worst = {verdict.sample_id: verdict.category for verdict in stats.sample_worst_labels(scene["project"])}
    assert [worst[sample.pk] for sample in [*scene["s"], *scene["t"]]] == WORST


@pytest.mark.parametrize("hallucinated", list(TRUTHS))
def test_each_truth_gives_the_figures_worked_out_by_hand_in_the_api(
    judged: dict[str, Any], hallucinated: str
) -> None:
    client = login(judged["admin"])
    response = client.get("/api/projects/demo/detector-eval/", {"hallucinated": hallucinated})
    assert response.status_code == 200
    assert figures_of(response.json()) == expected(hallucinated)


def test_the_api_default_is_u_or_q(judged: dict[str, Any]) -> None:
    client = login(judged["admin"])
    assert figures_of(client.get("/api/projects/demo/detector-eval/").json()) == expected("UQ")


@pytest.mark.parametrize("hallucinated", list(TRUTHS))
def test_each_truth_gives_the_figures_worked_out_by_hand_in_the_command(judged: dict[str, Any], hallucinated: str) -> None:
    printed = io.StringIO()
    call_command("detector_eval", "--project", "demo", "--hallucinated", hallucinated, "--json", stdout=printed)
    assert figures_of(json.loads(printed.getvalue())) == expected(hallucinated)


def test_the_command_default_is_u_or_q_and_its_table_names_the_truth(judged: dict[str, Any]) -> None:
    printed = io.StringIO()
    call_command("detector_eval", "--project", "demo", "--json", stdout=printed)
    assert figures_of(json.loads(printed.getvalue())) == expected("UQ")
    table = io.StringIO()
    call_command("detector_eval", "--project", "demo", "--hallucinated", "U", stdout=table)
    assert "hallucinated when the worst label is U (--hallucinated U)" in table.getvalue()
    table = io.StringIO()
    call_command("detector_eval", "--project", "demo", "--hallucinated", "UQB", stdout=table)
    assert "hallucinated when the worst label is U, Q or B" in table.getvalue()


@pytest.mark.parametrize("bad", ["Q", "uq", "U,Q", "U+Q", "all"])
def test_a_bad_truth_is_a_400_naming_the_parameter_and_the_values(
    judged: dict[str, Any], bad: str
) -> None:
    client = login(judged["admin"])
    response = client.get("/api/projects/demo/detector-eval/", {"hallucinated": bad})
    assert response.status_code == 400
    assert list(response.json()) == ["hallucinated"]
    message = response.json()["hallucinated"][0]
    assert repr(bad).strip("'") in message and "U, UQ, UQB" in message


def test_an_empty_truth_is_a_400_too(judged: dict[str, Any]) -> None:
    client = login(judged["admin"])
    response = client.get("/api/projects/demo/detector-eval/?hallucinated=")
    assert response.status_code == 400
    assert list(response.json()) == ["hallucinated"]


def test_a_bad_truth_is_refused_by_the_command_naming_the_option(judged: dict[str, Any]) -> None:
    with pytest.raises(CommandError, match=r"--hallucinated must be one of U, UQ, UQB, not 'UQX'"):
        call_command("detector_eval", "--project", "demo", "--hallucinated", "UQX", stdout=io.StringIO())


def test_the_schema_describes_the_parameter(admin_user: Any) -> None:
    client = login(admin_user)
    document = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    parameters = document["paths"]["/api/projects/{slug}/detector-eval/"]["get"]["parameters"]
    (parameter,) = [parameter for parameter in parameters if parameter["name"] == "hallucinated"]
    assert parameter["in"] == "query"
    assert parameter["schema"]["enum"] == ["U", "UQ", "UQB"]
    assert parameter["schema"]["default"] == "UQ"
    assert "Unwanted or Questionable" in parameter["description"]


def page_figures(client: Any, **query: str) -> tuple[dict[str, dict[str, float]], Any]:
    response = client.get("/projects/demo/results/", query)
    assert response.status_code == 200
    shown = tags(response)
    figures = {}
    for name in ("hhem", "gpt", "judge:llm"):
        shown.one("tr", data_detector=name)
        figures[name] = {}
    html = response.content.decode()
    for name in figures:
        row = html.split(f'data-detector="{name}"', 1)[1].split("</tr>", 1)[0]
        for metric in ("balanced_accuracy", "f1_macro"):
            cell = row.split(f'data-metric="{metric}">', 1)[1].split("<", 1)[0]
            figures[name][metric] = float(cell.rstrip("%"))
    return figures, shown


@pytest.mark.parametrize("hallucinated", list(TRUTHS))
def test_the_results_page_scores_the_detectors_against_the_chosen_truth(
    judged: dict[str, Any], hallucinated: str
) -> None:
    client = login(judged["admin"])
    figures, shown = page_figures(client, hallucinated=hallucinated)
    assert figures == expected(hallucinated)
    assert shown.one("p", data_role="truth")["data-hallucinated"] == hallucinated
    # The select beside the threshold keeps the choice; the URL carries it (the form pushes its query).
    assert shown.one("select", name="hallucinated")["data-default"] == "UQ"
    assert shown.one("option", value=hallucinated, selected="")


def test_the_kept_page_figures_are_keyed_on_the_truth(judged: dict[str, Any]) -> None:
    client = login(judged["admin"])
    assert page_figures(client)[0] == expected("UQ")
    assert page_figures(client, hallucinated="U")[0] == expected("U")
    assert page_figures(client, hallucinated="UQ")[0] == expected("UQ")  # not U's kept figures
    assert FigureSet.objects.filter(kind="results").count() == 2  # the default and UQ are one query
    assert sorted(figure_set.query["hallucinated"] for figure_set in FigureSet.objects.all()) == ["U", "UQ"]


def test_a_bad_truth_on_the_page_is_a_400_naming_it_and_keeps_nothing(judged: dict[str, Any]) -> None:
    client = login(judged["admin"])
    response = client.get("/projects/demo/results/", {"hallucinated": "Q"})
    assert response.status_code == 400
    tags(response).one("p", data_role="error")
    assert "hallucinated: 'Q' is not one of U, UQ, UQB" in unescape(response.content.decode())
    assert not FigureSet.objects.exists()
