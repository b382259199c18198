"""The judges API gives only the settings a judge's kind uses; the others are null, not their columns' defaults: an
imported judge (outputs made elsewhere) has no endpoint, model, concurrency, prices or NLI model; a rubric judge no
NLI settings, an NLI judge no endpoint settings. The schema says so, and the judges page shows none of them either."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from annotate.models import Batch, Project
from judging.models import Judge
from judging.services.ingest import import_judgements
from judging.services.judges import NLI_SETTINGS, RUBRIC_SETTINGS
from tests.conftest import login

pytestmark = pytest.mark.django_db


@pytest.fixture
def three_kinds(project: Project, batch: Batch) -> dict[str, Judge]:
    import_judgements(project, [("judged.jsonl", b'{"sample": "0", "judge": "elsewhere", "score": 4}')])
    rubric = Judge.objects.create(project=project, name="llm", kind=Judge.Kind.RUBRIC, base_url="http://127.0.0.1:9/v1",
                                  model="m", api_key_env="OPENAI_API_KEY", price_input_per_mtok=2.5)
    nli = Judge.objects.create(project=project, name="hhem", kind=Judge.Kind.NLI, nli_model_path="/models/hhem")
    return {"imported": Judge.objects.get(project=project, name="elsewhere"), "rubric": rubric, "nli": nli}


def test_each_judge_has_only_its_kind_s_settings_the_others_are_null(
    project: Project, admin_user: Any, three_kinds: dict[str, Judge]
) -> None:
    rows = {row["name"]: row for row in login(admin_user).get(f"/api/projects/{project.slug}/judges/").json()}
    imported = rows["elsewhere"]
    assert imported["kind"] == "imported"
    assert {name: imported[name] for name in (*RUBRIC_SETTINGS, *NLI_SETTINGS)} == dict.fromkeys(
        (*RUBRIC_SETTINGS, *NLI_SETTINGS))
    rubric = rows["llm"]
    assert (rubric["base_url"], rubric["model"], rubric["api_key_env"], rubric["concurrency"],
            rubric["price_input_per_mtok"]) == ("http://127.0.0.1:9/v1", "m", "OPENAI_API_KEY", 4, 2.5)
    assert {name: rubric[name] for name in NLI_SETTINGS} == dict.fromkeys(NLI_SETTINGS)
    nli = rows["hhem"]
    assert (nli["nli_model_path"], nli["nli_max_length"], nli["nli_overlap"]) == ("/models/hhem", 512, 32)
    assert {name: nli[name] for name in RUBRIC_SETTINGS} == dict.fromkeys(RUBRIC_SETTINGS)
    # Who, what and when stay for every kind.
    assert all(row["id"] and row["name"] and row["created_at"] for row in rows.values())


def test_the_schema_says_a_setting_may_be_null(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    fields = document["components"]["schemas"]["Judge"]["properties"]
    for name in (*RUBRIC_SETTINGS, *NLI_SETTINGS):
        assert fields[name].get("nullable") is True, name
        assert "kind does not use it" in fields[name]["description"], name


def test_the_judges_page_shows_no_setting_for_an_imported_judge(
    project: Project, admin_user: Any, three_kinds: dict[str, Judge]
) -> None:
    html = login(admin_user).get(reverse("judging-judges", args=[project.slug])).content.decode()
    row = html.split(f'<tr data-judge="{three_kinds["imported"].pk}">', 1)[1].split("</tr>", 1)[0]
    assert "imported outputs" in row
    for shown in ("$", "http", "<code>", 'name="concurrency"', ">4<"):
        assert shown not in row, shown
