from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotate.models import Assignment, Batch, Job, Membership, Passage, Project, Sample, SpanAnnotation
from annotate.services import ingest
from annotate.taxonomy import default_taxonomy
from tests.conftest import login

# A copy of shared/formats/faithbench_batch_example.json, the team's made-up example.
EXAMPLE = Path(__file__).parent / "faithbench_example.json"


def example() -> dict[str, Any]:
    return json.loads(EXAMPLE.read_text())


def write(tmp_path: Path, name: str, document: Any) -> Path:
    path = tmp_path / name
    path.write_text(document if isinstance(document, str) else json.dumps(document), encoding="utf-8")
    return path


def import_error(tmp_path: Path, document: Any, name: str = "batch_1.json") -> str:
    path = write(tmp_path, name, document)
    with pytest.raises(CommandError) as failure:
        call_command("import_faithbench", str(path), "--project", "fb")
    assert not Sample.objects.exists() and not SpanAnnotation.objects.exists() and not Batch.objects.exists()
    return str(failure.value)


@pytest.mark.django_db
def test_import_keeps_spans_links_notes_metadata_and_annotators(tmp_path: Path) -> None:
    path = write(tmp_path, "batch_7.json", example())
    call_command("import_faithbench", str(path), "--project", "fb")
    project = Project.objects.get(slug="fb")
    batch = Batch.objects.get(project=project)
    assert batch.name == "batch_7"
    samples = list(batch.samples.order_by("position"))
    assert [s.generator for s in samples] == ["example-org/model-a", "example-org/model-b"]
    assert samples[0].metadata["hhem-2.1"] == 0.21 and samples[1].metadata["gpt_4o"] == 1
    # both samples share one passage
    assert Passage.objects.filter(project=project).count() == 1
    spans = list(SpanAnnotation.objects.order_by("id"))
    assert len(spans) == 4
    first = spans[0]
    assert (first.start, first.end, first.text) == (51, 61, "nine weeks")
    assert (first.source_start, first.source_end, first.source_text) == (56, 67, "eight weeks")
    assert first.labels == ["Unwanted", "Unwanted.Intrinsic"] and first.note == "eight weeks in the source"
    assert first.annotator.username == "Ana" and not first.annotator.has_usable_password()
    assert spans[2].source_start is None and spans[2].annotator.username == "Bo"
    submitted = Assignment.objects.filter(batch=batch, status="submitted")
    assert sorted(a.annotator.username for a in submitted) == ["Ana", "Bo"]
    assert Job.objects.filter(project=project, kind="embed").count() == 1


@pytest.mark.django_db
def test_import_reuses_people_across_batches_and_takes_a_roster(tmp_path: Path) -> None:
    one = write(tmp_path, "batch_1.json", example())
    two = write(tmp_path, "batch_2.json", example())
    call_command("import_faithbench", str(one), str(two), "--project", "fb", "--roster", "Ana,Bo,Cy", "--allow-repeats")
    assert get_user_model().objects.filter(username__in=["Ana", "Bo", "Cy"]).count() == 3
    for batch in Batch.objects.all():
        assert sorted(batch.assignments.values_list("annotator__username", flat=True)) == ["Ana", "Bo", "Cy"]


@pytest.mark.django_db
def test_quirks_are_loaded_verbatim(tmp_path: Path) -> None:
    document = example()
    spans = document["samples"][0]["annotations"]
    spans[0]["label"] = ["Unwanted", "Unwanted.Instrinsic"]
    spans[1]["label"] = ["Unwanted.Extrinsic"]  # child without parent
    spans[2]["label"] = []
    spans[2]["note"] = None
    document["samples"][1]["metadata"]["hhem-2.1"] = None
    call_command("import_faithbench", str(write(tmp_path, "b.json", document)), "--project", "fb")
    stored = list(SpanAnnotation.objects.order_by("id"))
    assert stored[0].labels == ["Unwanted", "Unwanted.Instrinsic"]
    assert stored[1].labels == ["Unwanted.Extrinsic"]
    assert stored[2].labels == [] and stored[2].note == "" and stored[2].imported_fields["note"] is None
    assert Sample.objects.get(external_id="1").metadata["hhem-2.1"] is None


@pytest.mark.django_db
def test_an_empty_span_is_kept_and_exported_back(tmp_path: Path) -> None:
    # In range and matching its (empty) quote: a dump may hold one, and it must not fail a whole import.
    document = example()
    document["samples"][1]["annotations"][0].update(summary_span="", summary_start=5, summary_end=5)
    document["samples"][0]["annotations"][0]["annotator_name"] = " Ana "  # matched as Ana, written back as is
    call_command("import_faithbench", str(write(tmp_path, "b.json", document)), "--project", "fb")
    empty = SpanAnnotation.objects.get(start=5)
    assert (empty.end, empty.text) == (5, "")
    assert SpanAnnotation.objects.filter(annotator__username="Ana").count() == 2
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(tmp_path / "out"))
    assert json.loads((tmp_path / "out" / "b.json").read_text()) == document


@pytest.mark.django_db
def test_non_bmp_text_offsets_are_code_points(tmp_path: Path) -> None:
    summary = "Bridge 🌉 reopened after 𝟗 weeks."
    start = summary.index("reopened")
    document = {"samples": [{"sample_id": 1, "source": "The 🌉 bridge reopened.", "summary": summary,
                             "annotations": [{"annot_id": 1, "annotator_id": "x", "annotator_name": "Ana",
                                              "label": ["Benign"], "note": "", "summary_span": "reopened",
                                              "summary_start": start, "summary_end": start + 8,
                                              "source_span": "bridge", "source_start": 6, "source_end": 12}],
                             "metadata": {"summarizer": "m"}}]}
    call_command("import_faithbench", str(write(tmp_path, "b.json", document)), "--project", "fb")
    span = SpanAnnotation.objects.get()
    assert (span.start, span.text, span.source_text) == (9, "reopened", "bridge")


@pytest.mark.django_db
def test_html_is_stored_as_given(tmp_path: Path) -> None:
    document = example()
    document["samples"][0]["source"] = "<script>alert(1)</script> " + document["samples"][0]["source"]
    document["samples"][0]["annotations"] = []
    call_command("import_faithbench", str(write(tmp_path, "b.json", document)), "--project", "fb")
    assert Passage.objects.filter(text__startswith="<script>").exists()


@pytest.mark.django_db
def test_a_passage_of_200000_characters_imports(tmp_path: Path) -> None:
    sentence = "The council met again on Tuesday to discuss the bridge. "
    source = (sentence * (200_000 // len(sentence) + 1))[:200_000]
    document = {"samples": [{"sample_id": 0, "source": source, "summary": "The council met.", "annotations": [],
                             "metadata": {"summarizer": "m"}}]}
    call_command("import_faithbench", str(write(tmp_path, "long.json", document)), "--project", "fb")
    assert len(Passage.objects.get().text) == 200_000


@pytest.mark.django_db
def test_malformed_json_names_file_line_and_column(tmp_path: Path) -> None:
    message = import_error(tmp_path, '{"samples": [\n{"sample_id": 0,,}]}', "broken.json")
    assert "broken.json" in message and "not valid JSON" in message and "line 2" in message


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["samples"][0].pop("summary"), "sample 0 (#0): missing field 'summary'"),
        (lambda d: d["samples"][1].pop("source"), "sample 1 (#1): missing field 'source'"),
        (lambda d: d["samples"][0]["annotations"][0].pop("summary_start"), "missing field 'summary_start'"),
        (lambda d: d["samples"][0]["annotations"][0].update(summary_end=999), "out of range"),
        (lambda d: d["samples"][0]["annotations"][0].update(summary_start=-1), "out of range"),
        (lambda d: d["samples"][0]["annotations"][0].update(summary_start=62), "out of range"),  # start > end
        (lambda d: d["samples"][0]["annotations"][0].update(summary_span="ten weeks"), "does not match the text"),
        (lambda d: d["samples"][0]["annotations"][0].update(source_span="nine weeks"), "'source_span'"),
        (lambda d: d["samples"][0]["annotations"][0].update(source_end=None), "both be set or both be null"),
        (lambda d: d["samples"][0]["annotations"][0].update(label=["Wrong"]), "unknown label 'Wrong'"),
        (lambda d: d["samples"][0]["annotations"][0].update(label="Benign"), "field 'label'"),
        (lambda d: d["samples"][0]["annotations"][0].update(annotator_name=""), "'annotator_name'"),
        (lambda d: d["samples"][0]["annotations"][0].update(summary_start="51"), "'summary_start' must be a whole"),
        (lambda d: d["samples"][1].update(sample_id=0), "repeats an earlier sample"),
        (lambda d: d["samples"][0].update(metadata=[1]), "'metadata' must be an object"),
        (lambda d: d.update(samples={}), "list under 'samples'"),
    ],
)
def test_bad_input_is_named_and_changes_nothing(tmp_path: Path, change: Any, expected: str) -> None:
    document = copy.deepcopy(example())
    change(document)
    message = import_error(tmp_path, document, "batch_9.json")
    assert "batch_9.json" in message
    assert expected in message


@pytest.mark.django_db
def test_an_error_in_the_second_file_imports_neither(tmp_path: Path) -> None:
    good = write(tmp_path, "good.json", example())
    bad_document = example()
    bad_document["samples"][1]["annotations"][0]["label"] = ["Nope"]
    bad = write(tmp_path, "bad.json", bad_document)
    with pytest.raises(CommandError, match="bad.json"):
        call_command("import_faithbench", str(good), str(bad), "--project", "fb")
    assert not Batch.objects.exists()


@pytest.mark.django_db
def test_an_existing_batch_name_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "batch_1.json", example())
    call_command("import_faithbench", str(path), "--project", "fb")
    with pytest.raises(CommandError, match="already exists"):
        call_command("import_faithbench", str(path), "--project", "fb")
    assert Batch.objects.count() == 1 and SpanAnnotation.objects.count() == 4


def test_samples_jsonl_groups_five_passages_a_batch() -> None:
    lines = [
        json.dumps({"passage_id": f"p{p}", "source": f"Source {p}.", "summary": f"Summary {p}-{g}.",
                    "generator": f"gen-{g}", "metadata": {"score": 0.5}})
        for p in range(7) for g in range(10)
    ]
    batches = ingest.parse_samples_jsonl("\n".join(lines), "upload.jsonl")
    assert [b.name for b in batches] == ["upload-1", "upload-2"]
    assert [len(b.samples) for b in batches] == [50, 20]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"passage_id": "p", "source": "s"}', "line 1: missing field 'summary'"),
        ("not json", "line 1: not valid JSON"),
        ('{"passage_id": "p", "source": "s", "summary": "x", "generator": 3}', "'generator' must be a string"),
        ('[1]', "line 1: expected a JSON object"),
    ],
)
def test_samples_jsonl_errors_name_the_line(line: str, expected: str) -> None:
    with pytest.raises(ingest.ImportFailed) as failure:
        ingest.parse_samples_jsonl(line, "upload.jsonl")
    assert "upload.jsonl" in str(failure.value) and expected in str(failure.value)


def test_samples_jsonl_refuses_one_passage_id_with_two_sources() -> None:
    lines = [
        '{"passage_id": "p", "source": "one", "summary": "a", "generator": "g"}',
        '{"passage_id": "p", "source": "two", "summary": "b", "generator": "g"}',
    ]
    with pytest.raises(ingest.ImportFailed, match="line 2: field 'source' differs"):
        ingest.parse_samples_jsonl("\n".join(lines), "u.jsonl")


def test_parse_faithbench_rejects_non_utf8() -> None:
    with pytest.raises(ingest.ImportFailed, match="x.json: not UTF-8"):
        ingest.parse_faithbench(b'{"samples": ["\xff"]}', "x.json", default_taxonomy())


# --------------------------------------------------------------------------- one name, several annotator_ids


def two_people_called_ana() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two batches in which 'Ana' has different batch-local ids; Bo keeps his id in both."""
    first, second = example(), example()
    for sample in second["samples"]:
        # Other samples (another generator's summaries), as two batches of a project hold: the same ones again
        # would be refused as repeats.
        sample["metadata"]["summarizer"] += "-2"
        for annotation in sample["annotations"]:
            if annotation["annotator_name"] == "Ana":
                annotation["annotator_id"] = "b2-aa11"
    return first, second


def run_import(*paths: Path, project: str = "fb", extra: tuple[str, ...] = ()) -> str:
    out = io.StringIO()
    call_command("import_faithbench", *map(str, paths), "--project", project, *extra, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_a_name_with_two_annotator_ids_is_reported_and_merged_by_default(tmp_path: Path) -> None:
    first, second = two_people_called_ana()
    output = run_import(write(tmp_path, "a.json", first), write(tmp_path, "b.json", second))
    assert (
        "warning: annotator name 'Ana' carries 2 different annotator_ids ('b1-7f3a' in "
        f"{tmp_path / 'a.json'}; 'b2-aa11' in {tmp_path / 'b.json'}): imported as one annotator, 'Ana'. "
        "If they are different people, import again with --annotators by-id."
    ) in output
    assert "Bo" not in output.split("warning:", 1)[1]  # Bo has one id: nothing to say
    assert SpanAnnotation.objects.filter(annotator__username="Ana").count() == 4
    assert not get_user_model().objects.filter(username__startswith="Ana (").exists()


@pytest.mark.django_db
def test_two_ids_under_one_name_inside_one_file_are_reported() -> None:
    document = example()
    document["samples"][0]["annotations"][1]["annotator_id"] = "b1-ffff"  # Ana's second span
    project = Project.objects.create(name="P", slug="p")
    report = ingest.import_files(project, [("only.json", json.dumps(document).encode())])
    assert [(c.name, c.files_by_id, c.usernames, c.merged) for c in report.conflicts] == [
        ("Ana", {"b1-7f3a": ["only.json"], "b1-ffff": ["only.json"]}, ["Ana"], True)
    ]
    assert report.matching == "by-name"


@pytest.mark.django_db
def test_by_id_keeps_people_apart_and_the_export_gives_the_files_back(tmp_path: Path) -> None:
    first, second = two_people_called_ana()
    paths = [write(tmp_path, "a.json", first), write(tmp_path, "b.json", second)]
    output = run_import(*paths, extra=("--annotators", "by-id"))
    assert "(by-id)" in output
    assert "annotator name 'Ana' carries 2 different annotator_ids" in output
    assert "kept apart as 'Ana (b1-7)', 'Ana (b2-a)'." in output
    batches = {batch.name: batch for batch in Batch.objects.all()}
    for name, ana in (("a", "Ana (b1-7)"), ("b", "Ana (b2-a)")):
        submitted = batches[name].assignments.values_list("annotator__username", flat=True)
        assert sorted(submitted) == [ana, "Bo (b1-0)"]  # Bo: the same id in both batches, one person
        assert SpanAnnotation.objects.filter(sample__batch=batches[name], annotator__username=ana).count() == 2
    imported = get_user_model().objects.filter(username__in=["Ana (b1-7)", "Ana (b2-a)", "Bo (b1-0)"])
    assert imported.count() == 3 and not any(user.has_usable_password() for user in imported)
    assert not get_user_model().objects.filter(username__in=["Ana", "Bo"]).exists()
    assert Membership.objects.filter(project__slug="fb", user__in=imported).count() == 3
    call_command("export", "--project", "fb", "--format", "faithbench", "--out", str(tmp_path / "out"))
    assert json.loads((tmp_path / "out" / "a.json").read_text()) == first
    assert json.loads((tmp_path / "out" / "b.json").read_text()) == second


def test_short_ids_grow_until_they_differ() -> None:
    assert ingest._short_ids(["a3ac01", "a3ac02", "ff", "77f0b2c"]) == {
        "a3ac01": "a3ac01", "a3ac02": "a3ac02", "ff": "ff", "77f0b2c": "77f0",
    }


@pytest.mark.django_db
def test_by_id_roster_names_stand_for_each_user_of_that_name_in_the_batch(tmp_path: Path) -> None:
    document = example()
    document["samples"][0]["annotations"][1]["annotator_id"] = "zz-0000"  # a second 'Ana' in the batch
    run_import(write(tmp_path, "r.json", document), extra=("--annotators", "by-id", "--roster", "Ana,Cy"))
    submitted = Batch.objects.get().assignments.values_list("annotator__username", flat=True)
    assert sorted(submitted) == ["Ana (b1-7)", "Ana (zz-0)", "Cy"]


@pytest.mark.django_db
def test_the_upload_form_matches_by_id_and_shows_the_conflict(project: Project, admin_user: Any) -> None:
    first, second = two_people_called_ana()
    files = [SimpleUploadedFile("a.json", json.dumps(first).encode()),
             SimpleUploadedFile("b.json", json.dumps(second).encode())]
    page = login(admin_user).post("/projects/demo/import/", {"files": files, "annotators": "by-id"}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "Imported 2 batches, 4 samples and 8 spans" in html
    assert ("annotator name 'Ana' carries 2 different annotator_ids ('b1-7f3a' in a.json; 'b2-aa11' in b.json): "
            "kept apart as 'Ana (b1-7)', 'Ana (b2-a)'.") in html
    assert get_user_model().objects.filter(username__in=["Ana (b1-7)", "Ana (b2-a)"]).count() == 2
    assert 'name="annotators"' in html and 'value="by-id"' in html


@pytest.mark.django_db
def test_the_upload_form_merges_by_name_by_default_and_says_how_to_keep_people_apart(
    project: Project, admin_user: Any
) -> None:
    first, second = two_people_called_ana()
    files = [SimpleUploadedFile("a.json", json.dumps(first).encode()),
             SimpleUploadedFile("b.json", json.dumps(second).encode())]
    page = login(admin_user).post("/projects/demo/import/", {"files": files}, follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "imported as one annotator, 'Ana'. If they are different people, import again matching annotators by id." in html


@pytest.mark.django_db
def test_an_unknown_annotator_matching_is_refused(project: Project, admin_user: Any) -> None:
    upload = SimpleUploadedFile("a.json", EXAMPLE.read_bytes())
    page = login(admin_user).post("/projects/demo/import/", {"files": [upload], "annotators": "by-mood"}, follow=True)
    assert "Nothing was imported. annotators: &#x27;by-mood&#x27; is not one of by-name, by-id" in page.content.decode()
    assert not Batch.objects.exists()


# --------------------------------------------------------------------------- lengths of bounded columns


def snapshot() -> dict[str, list[Any]]:
    """Every row an import writes, to show that a failed import changed nothing."""
    return {
        "users": list(get_user_model().objects.order_by("pk").values_list("pk", "username")),
        "projects": list(Project.objects.order_by("pk").values_list("pk", "slug")),
        "batches": list(Batch.objects.order_by("pk").values_list("pk", "name")),
        "passages": list(Passage.objects.order_by("pk").values_list("pk", "external_id")),
        "samples": list(Sample.objects.order_by("pk").values_list("pk", "external_id", "generator")),
        "spans": list(SpanAnnotation.objects.order_by("pk").values_list("pk", "external_id")),
        "assignments": list(Assignment.objects.order_by("pk").values_list("pk", "annotator_id")),
        "members": list(Membership.objects.order_by("pk").values_list("pk", "user_id")),
        "jobs": list(Job.objects.order_by("pk").values_list("pk", "status")),
    }


def too_long_annotator(document: dict[str, Any]) -> None:
    document["samples"][1]["annotations"][0]["annotator_name"] = "N" * 151


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda d: d["samples"][1].update(sample_id="s" * 201),
         "batch_9.json: sample '" + "s" * 56 + "... (#1): field 'sample_id' has 201 characters; the limit is 200"),
        (lambda d: d["samples"][1]["metadata"].update(summarizer="org/" + "m" * 297),
         "batch_9.json: sample 1 (#1): field 'metadata.summarizer' has 301 characters; the limit is 300"),
        (lambda d: d["samples"][1]["annotations"][0].update(annot_id="7" * 101),
         "batch_9.json: sample 1 (#1): annotation #0 (annot_id '777777777777777777777777777777777777777777777777777"
         "77777...): field 'annot_id' has 101 characters; the limit is 100"),
        (too_long_annotator,
         "batch_9.json: sample 1 (#1): annotation #0 (annot_id 4): field 'annotator_name' has 151 characters; "
         "the limit is 150"),
        (lambda d: d.update(roster=["Ana", "R" * 151]),
         "batch_9.json: roster name '" + "R" * 56 + "...: field 'roster' has 151 characters; the limit is 150"),
    ],
)
def test_an_over_long_value_fails_the_whole_import_and_changes_nothing(
    tmp_path: Path, change: Any, expected: str
) -> None:
    run_import(write(tmp_path, "earlier.json", example()))  # the project already holds a batch
    before = snapshot()
    document = example()
    change(document)
    good = write(tmp_path, "batch_1.json", example())
    with pytest.raises(CommandError) as failure:
        run_import(good, write(tmp_path, "batch_9.json", document))
    assert str(failure.value) == f"nothing was imported: {tmp_path / 'batch_9.json'}: {expected.split(': ', 1)[1]}"
    assert snapshot() == before


@pytest.mark.django_db
def test_a_file_name_too_long_for_a_batch_name_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "b" * 201 + ".json", example())
    with pytest.raises(CommandError) as failure:
        run_import(path)
    assert str(failure.value) == (
        f"nothing was imported: {path}: the batch name (the file name without its extension) has 201 characters; "
        "the limit is 200"
    )
    assert snapshot()["projects"] == [] and snapshot()["users"] == []


@pytest.mark.django_db
def test_a_by_id_username_that_outgrows_the_limit_is_refused(tmp_path: Path) -> None:
    document = example()
    for annotation in document["samples"][0]["annotations"][:2]:  # Ana's spans: 147 characters, fits by name
        annotation["annotator_name"] = "N" * 147
    path = write(tmp_path, "long.json", document)
    run_import(path, project="by-name")
    assert get_user_model().objects.filter(username="N" * 147).exists()
    before = snapshot()
    with pytest.raises(CommandError) as failure:
        run_import(write(tmp_path, "long2.json", document), project="by-name", extra=("--annotators", "by-id"))
    assert "long2.json: sample 0 (#0): annotation #0 (annot_id 1): field 'annotator_name' with its annotator_id makes " \
        "the username 'NNNN" in str(failure.value)
    assert "of 154 characters; the limit is 150" in str(failure.value)
    assert snapshot() == before


@pytest.mark.django_db
def test_a_roster_name_too_long_for_a_username_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CommandError) as failure:
        run_import(write(tmp_path, "b.json", example()), extra=("--roster", "Ana," + "R" * 151))
    assert "nothing was imported: roster name 'RRRR" in str(failure.value)
    assert "field 'roster' has 151 characters; the limit is 150" in str(failure.value)
    assert snapshot()["batches"] == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"passage_id": "p" * 201}, "long.jsonl: line 2: field 'passage_id' has 201 characters; the limit is 200"),
        ({"generator": "g" * 301}, "long.jsonl: line 2: field 'generator' has 301 characters; the limit is 300"),
        ({"sample_id": "s" * 201}, "long.jsonl: line 2: field 'sample_id' has 201 characters; the limit is 200"),
        ({"batch": "b" * 201}, "long.jsonl: line 2: field 'batch' has 201 characters; the limit is 200"),
    ],
)
def test_samples_jsonl_over_long_values_name_the_line_and_change_nothing(
    project: Project, admin_user: Any, fields: dict[str, str], expected: str
) -> None:
    lines = [
        {"passage_id": "p1", "source": "One.", "summary": "A.", "generator": "g"},
        {"passage_id": "p2", "source": "Two.", "summary": "B.", "generator": "g", **fields},
    ]
    content = "\n".join(json.dumps(line) for line in lines).encode()
    before = snapshot()
    page = login(admin_user).post("/projects/demo/import/", {"files": [SimpleUploadedFile("long.jsonl", content)]},
                                  follow=True)
    assert f"Nothing was imported. {expected}".replace("'", "&#x27;") in page.content.decode()
    assert snapshot() == before


def test_samples_jsonl_batch_names_made_from_a_long_file_name_are_checked() -> None:
    line = '{"passage_id": "p", "source": "s", "summary": "x", "generator": "g"}'
    assert [b.name for b in ingest.parse_samples_jsonl(line, "f" * 198 + ".jsonl")] == ["f" * 198 + "-1"]  # 200 fits
    with pytest.raises(ingest.ImportFailed) as failure:
        ingest.parse_samples_jsonl(line, "f" * 199 + ".jsonl")
    assert str(failure.value).endswith(
        "(the file name without its extension and a number) has 201 characters; the limit is 200"
    )
