"""Which id names a judgement's sample, on every surface: ``sample_id`` is the sample's database id and
``sample_external_id`` its id in the imported file, alike in the run's judgements API, the judgement exports and
``judge --json``, so a client joins them on one name. The old fields keep their meaning (clients rely on them): the
API's ``sample`` is the database id, the exports' and ``judge --json``'s ``sample`` the external id."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Project, Sample
from judging.models import JudgeRun
from judging.services.export import export_lines
from tests.conftest import login
from tests.judging.llm_server import LoopbackLLM
from tests.judging.run_factories import add_samples

pytestmark = pytest.mark.django_db


def numbered_like_other_samples(project: Project) -> list[Sample]:
    """Three samples whose external ids are the database ids of the others, the case where a join on the wrong
    ``sample`` gives wrong rows rather than none."""
    samples = add_samples(project, 3)
    ids = [sample.pk for sample in samples]
    for sample, external_id in zip(samples, [ids[2], ids[0], ids[1]], strict=True):
        Sample.objects.filter(pk=sample.pk).update(external_id=str(external_id))
    return list(Sample.objects.filter(pk__in=ids).order_by("position"))


def test_the_api_the_exports_and_judge_json_name_both_ids_alike(project: Project, admin_user: Any) -> None:
    samples = numbered_like_other_samples(project)
    out = io.StringIO()
    with LoopbackLLM() as server:
        call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model", "test-model", "--json",
                     stdout=out)
    printed = json.loads(out.getvalue())
    run = JudgeRun.objects.get(pk=printed["run"])
    api = login(admin_user).get(f"/api/judge-runs/{run.pk}/judgements/").json()["results"]
    exported = [json.loads(line) for line in export_lines(project, what="judgements", format="jsonl", run=run)]
    table = list(csv.DictReader(io.StringIO("".join(export_lines(project, what="judgements", format="csv", run=run)),
                                            newline="")))

    truth = {sample.pk: sample.external_id for sample in samples}
    assert {row["sample_id"]: row["sample_external_id"] for row in api} == truth
    assert {row["sample_id"]: row["sample_external_id"] for row in exported} == truth
    assert {int(row["sample_id"]): row["sample_external_id"] for row in table} == truth
    assert {entry["sample_id"]: entry["sample_external_id"] for entry in printed["judgements"]} == truth
    # The old names keep their meaning: the API's sample is the database id, the others' the external id.
    assert all(row["sample"] == row["sample_id"] for row in api)
    assert all(row["sample"] == row["sample_external_id"] for row in [*exported, *table, *printed["judgements"]])
    # Joined on sample_id, every API row meets the export row of the same sample (on "sample" they would not).
    by_id = {row["sample_id"]: row for row in exported}
    assert all(by_id[row["sample_id"]]["sample_external_id"] == row["sample_external_id"] for row in api)


def test_the_schema_says_which_field_is_which_id(admin_user: Any) -> None:
    document = login(admin_user).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    fields = document["components"]["schemas"]["Judgement"]["properties"]
    assert "database id" in fields["sample"]["description"]
    assert "database id" in fields["sample_id"]["description"]
    assert "external id" in fields["sample_external_id"]["description"]
    assert fields["sample_id"]["type"] == "integer" and fields["sample_external_id"]["type"] == "string"
