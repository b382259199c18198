"""A FaithBench export imported into a new project gives the figures of the project it came from.

The importer counts as a batch's annotators the names under the file's ``roster`` key, or, without one,
everyone with a span that counts. The export writes a roster where that default would be wrong: a submitter
who left no span (Consistent on every sample) and an annotator whose round was re-opened (spans, not
submitted). It also writes each sample's generator where FaithBench readers look for it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotate.models import Assignment, Batch, Project, Sample
from annotate.services import freeze, ingest, spans
from annotate.services.stats import project_agreement, project_halu_rates
from tests.conftest import PASSWORD

pytestmark = pytest.mark.django_db
SCHEMES = ("C|U", "C|B|U", "C+B|Q|U", "C+B|Q+U", "C|B|Q|U")
LEVELS = ("nominal", "ordinal", "interval")
AGGREGATES = ("pooled", "batch-mean")


def figures(project: Project) -> dict[str, Any]:
    """Every alpha (scheme x level x aggregate, with its reason when undefined) and the hallucination rates."""
    alphas = {}
    for scheme in SCHEMES:
        for level in LEVELS:
            for aggregate in AGGREGATES:
                report = project_agreement(project, scheme, level, aggregate, 1)
                alpha = None if report["alpha"] is None else round(report["alpha"], 9)
                alphas[f"{scheme} {level} {aggregate}"] = (alpha, report["reason"], report["annotators"])
    return {"alpha": alphas, "rates": project_halu_rates(project, 1)}


def submit(batch: Batch, user: Any) -> None:
    for sample in batch.samples.all():
        spans.mark_sample_done(sample, user, round=1, done=True)
    assert Assignment.objects.get(batch=batch, annotator=user, round=1).status == Assignment.Status.SUBMITTED


@pytest.fixture
def annotated(project: Project, batch: Batch, alice: Any, bob: Any) -> Batch:
    """alice and bob submitted batch-1 with spans that disagree on two of its three samples."""
    first, second, third = batch.samples.order_by("position")
    spans.create_span(first, alice, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"])
    spans.create_span(second, alice, round=1, start=0, end=5, labels=["Benign"])
    spans.create_span(first, bob, round=1, start=51, end=61, labels=["Unwanted.Intrinsic"])
    spans.create_span(third, bob, round=1, start=0, end=3, labels=["Questionable"])
    submit(batch, alice)
    submit(batch, bob)
    return batch


def add_annotator(batch: Batch, username: str) -> Any:
    user = get_user_model().objects.create_user(username=username, password=PASSWORD)
    Assignment.objects.create(batch=batch, annotator=user, round=1)
    return user


def export_and_reimport(tmp_path: Path, project: Project) -> tuple[Project, dict[str, Any]]:
    out = tmp_path / "out"
    call_command("export", "--project", project.slug, "--format", "faithbench", "--out", str(out))
    files = sorted(out.iterdir())
    call_command("import_faithbench", *map(str, files), "--project", "copy")
    return Project.objects.get(slug="copy"), json.loads(files[0].read_text(encoding="utf-8"))


def test_a_submitter_without_spans_still_counts_after_a_round_trip(
    tmp_path: Path, project: Project, annotated: Batch
) -> None:
    cy = add_annotator(annotated, "cy")
    submit(annotated, cy)  # judged every sample consistent: no span at all
    before = figures(project)
    assert before["alpha"]["C|U nominal pooled"][2] == 3
    copy, document = export_and_reimport(tmp_path, project)
    assert sorted(document["roster"]) == ["alice", "bob", "cy"]
    assert figures(copy) == before


def test_a_reopened_annotator_does_not_count_after_a_round_trip(
    tmp_path: Path, project: Project, annotated: Batch, admin_user: Any
) -> None:
    dave = add_annotator(annotated, "dave")
    first, second, third = annotated.samples.order_by("position")
    spans.create_span(second, dave, round=1, start=0, end=5, labels=["Unwanted.Extrinsic"])
    spans.create_span(third, dave, round=1, start=0, end=3, labels=["Unwanted.Extrinsic"])
    submit(annotated, dave)
    freeze.reopen_round(Assignment.objects.get(annotator=dave), admin_user, "fixing a label")
    before = figures(project)
    assert before["alpha"]["C|U nominal pooled"][2] == 2
    copy, document = export_and_reimport(tmp_path, project)
    # dave's spans travel with the file (an export holds all the work), but the roster leaves him out.
    assert {a["annotator_name"] for s in document["samples"] for a in s["annotations"]} == {"alice", "bob", "dave"}
    assert sorted(document["roster"]) == ["alice", "bob"]
    assert figures(copy) == before


def test_no_roster_is_written_when_the_importer_would_count_the_same_people(
    tmp_path: Path, project: Project, annotated: Batch
) -> None:
    _, document = export_and_reimport(tmp_path, project)
    assert "roster" not in document  # the spans alone say who annotated: the file stays as FaithBench writes it


def plain_project(lines: list[dict[str, Any]]) -> Project:
    project = Project.objects.create(name="Plain", slug="plain")
    ingest.import_files(project, [("plain.jsonl", "\n".join(map(json.dumps, lines)).encode())])
    return project


def test_samples_from_the_plain_jsonl_keep_their_generator_through_a_faithbench_export(
    tmp_path: Path, alice: Any
) -> None:
    source = "The bridge reopened on Tuesday."
    original = plain_project([
        {"passage_id": "p1", "source": source, "summary": "It reopened.", "generator": "org/model-a", "batch": "b1"},
        {"passage_id": "p1", "source": source, "summary": "It closed.", "generator": "org/model-b", "batch": "b1",
         "metadata": {"hhem-2.1": 0.2}},
    ])
    batch = Batch.objects.get(project=original)
    Assignment.objects.create(batch=batch, annotator=alice)
    spans.create_span(batch.samples.get(summary="It closed."), alice, round=1, start=3, end=9,
                      labels=["Unwanted.Intrinsic"])
    submit(batch, alice)
    before = project_halu_rates(original, 1)
    assert set(before) == {"org/model-a", "org/model-b"}

    copy, document = export_and_reimport(tmp_path, original)
    assert [s["metadata"] for s in document["samples"]] == [
        {"summarizer": "org/model-a"}, {"hhem-2.1": 0.2, "summarizer": "org/model-b"},
    ]
    assert sorted(Sample.objects.filter(project=copy).values_list("generator", flat=True)) == [
        "org/model-a", "org/model-b"
    ]
    assert project_halu_rates(copy, 1) == before


def test_a_summarizer_in_the_metadata_is_written_as_given(tmp_path: Path) -> None:
    plain_project([{"passage_id": "p1", "source": "S.", "summary": "T.", "generator": "org/model-c",
                              "metadata": {"summarizer": "as-given", "gpt_4o": 1}}])
    out = tmp_path / "out"
    call_command("export", "--project", "plain", "--format", "faithbench", "--out", str(out))
    (written,) = out.iterdir()
    assert json.loads(written.read_text())["samples"][0]["metadata"] == {"summarizer": "as-given", "gpt_4o": 1}


def test_a_roster_names_a_submitter_without_spans_in_the_batch_as_their_spans_elsewhere_do(tmp_path: Path) -> None:
    from tests.annotate.test_ingest import example

    get_user_model().objects.create_user(username="Bo", password=PASSWORD)  # outside: the file's Bo is "Bo (imported)"
    one = example()
    two = example()
    for sample in two["samples"]:
        sample["annotations"] = [a for a in sample["annotations"] if a["annotator_name"] == "Ana"]
    two["roster"] = ["Ana", "Bo"]  # Bo judged batch_2 consistent throughout
    paths = []
    for name, document in (("batch_1.json", one), ("batch_2.json", two)):
        (tmp_path / name).write_text(json.dumps(document), encoding="utf-8")
        paths.append(str(tmp_path / name))
    call_command("import_faithbench", *paths, "--project", "fb")
    fb = Project.objects.get(slug="fb")
    assert sorted(Assignment.objects.filter(batch__name="batch_2").values_list("annotator__username", flat=True)) == [
        "Ana", "Bo (imported)"
    ]
    before = figures(fb)
    copy, _ = export_and_reimport(tmp_path, fb)
    written = json.loads((tmp_path / "out" / "batch_2.json").read_text(encoding="utf-8"))
    assert written == two  # "Bo", as in batch_1's annotations: one person on re-import
    assert figures(copy) == before
