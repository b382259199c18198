"""A span of white space alone marks no words: the annotation page trims a selection, and the API refuses such a
span (a new one, or a change of its offsets or source link) with a 400 naming the field; nothing is stored. A
FaithBench file holding one is research data and imports as it is, so its export gives it back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Sample, SpanAnnotation
from annotate.services import export
from tests.annotate.test_ingest import example
from tests.conftest import login

MUST = "a span must hold at least one character that is not white space"


def post_span(client: Any, body: dict[str, Any]) -> Any:
    return client.post("/api/spans/", json.dumps(body), content_type="application/json")


@pytest.mark.django_db
def test_a_span_of_a_single_space_is_refused_naming_start(sample: Sample, alice: Any) -> None:
    space = sample.summary.index(" ")
    answer = post_span(login(alice), {"sample": sample.pk, "start": space, "end": space + 1, "labels": ["Benign"]})
    assert answer.status_code == 400
    assert answer.json() == {"start": [f"{space}..{space + 1} covers only white space (' '); {MUST}"]}
    assert not SpanAnnotation.objects.exists()


@pytest.mark.django_db
def test_other_white_space_counts_too_and_words_with_spaces_around_them_are_kept(sample: Sample, alice: Any) -> None:
    Sample.objects.filter(pk=sample.pk).update(summary="The bridge\u00a0\u3000\n\treopened.")
    blank_start = len("The bridge")
    blank_end = blank_start + 4
    client = login(alice)
    answer = post_span(client, {"sample": sample.pk, "start": blank_start, "end": blank_end, "labels": ["Benign"]})
    assert answer.status_code == 400
    assert answer.json() == {
        "start": [f"{blank_start}..{blank_end} covers only white space ('\\xa0\\u3000\\n\\t'); {MUST}"]
    }
    # White space around words is the client's choice: the API keeps the offsets it is sent (the page trims them).
    kept = post_span(client, {"sample": sample.pk, "start": blank_start - 6, "end": blank_end + 2, "labels": ["Benign"]})
    assert kept.status_code == 201 and kept.json()["text"] == "bridge\u00a0\u3000\n\tre"


@pytest.mark.django_db
def test_moving_a_span_onto_white_space_or_linking_white_space_changes_nothing(sample: Sample, alice: Any) -> None:
    client = login(alice)
    created = post_span(client, {"sample": sample.pk, "start": 0, "end": 7, "labels": ["Benign"]}).json()
    space = sample.summary.index(" ")
    moved = client.patch(f"/api/spans/{created['id']}/", json.dumps({"version": created["version"], "start": space,
                                                                    "end": space + 1}), content_type="application/json")
    assert moved.status_code == 400 and moved.json() == {"start": [f"{space}..{space + 1} covers only white space "
                                                                   f"(' '); {MUST}"]}
    source_space = sample.passage.text.index(" ")
    linked = post_span(client, {"sample": sample.pk, "start": 10, "end": 17, "labels": ["Benign"],
                                "source_start": source_space, "source_end": source_space + 1})
    assert linked.status_code == 400
    assert linked.json() == {"source_start": [f"{source_space}..{source_space + 1} covers only white space (' '); "
                                              f"{MUST}"]}
    stored = SpanAnnotation.objects.get()
    assert (stored.pk, stored.start, stored.end, stored.version) == (created["id"], 0, 7, created["version"])


@pytest.mark.django_db
def test_an_imported_white_space_span_is_kept_and_exported_back(tmp_path: Path) -> None:
    document = example()
    summary = document["samples"][0]["summary"]
    space = summary.index(" ")
    blank = {**document["samples"][0]["annotations"][0], "annot_id": 99, "summary_span": " ",
             "summary_start": space, "summary_end": space + 1, "source_span": None, "source_start": None,
             "source_end": None}
    document["samples"][0]["annotations"].append(blank)
    source = tmp_path / "batch_1.json"
    source.write_text(json.dumps(document))
    call_command("import_faithbench", str(source), "--project", "fb")
    stored = SpanAnnotation.objects.get(external_id="99")
    assert (stored.start, stored.end, stored.text) == (space, space + 1, " ")
    out = tmp_path / "out"
    export.export_to_path(stored.sample.project, out, export.ExportOptions(format="faithbench"))
    written = json.loads((out / "batch_1.json").read_text())
    assert blank in written["samples"][0]["annotations"]
