"""The same samples imported again under another file name are refused, each named with the batch that holds it;
allow_repeats (the form's "Allow repeats", the API's allow_repeats, the command's --allow-repeats) imports them
anyway. A sample is its source, summary and generator (annotate.services.ingest.repeats)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotate.models import Batch, Passage, Project, Sample, SpanAnnotation
from annotate.services import ingest
from tests.annotate.faithbench_refusals import rows
from tests.annotate.test_ingest import example
from tests.conftest import login

pytestmark = pytest.mark.django_db

W5 = json.dumps(example()).encode()


def lines(*samples: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(sample) for sample in samples).encode()


PLAIN = [{"passage_id": "p1", "source": "One. Two.", "summary": "One.", "generator": "g"},
         {"passage_id": "p1", "source": "One. Two.", "summary": "Two.", "generator": "g"}]


def refusal(project: Project, files: list[tuple[str, bytes]], **options: Any) -> ingest.ImportProblems:
    before = rows()
    with pytest.raises(ingest.ImportProblems) as refused:
        ingest.import_files(project, files, **options)
    assert rows() == before  # all or nothing
    return refused.value


def test_a_batch_file_saved_under_another_name_is_refused_naming_each_sample_and_its_batch(project: Project) -> None:
    ingest.import_files(project, [("w5batch.json", W5)])
    refused = refusal(project, [("W5 Batch (copy).json", W5)])
    assert refused.repeats == 2
    assert refused.messages == [
        "W5 Batch (copy).json: sample 0 (#0): a repeat: batch 'w5batch' holds it already (its sample '0') (the same "
        "source, summary and generator 'example-org/model-a'); a second copy would count twice in rates and "
        "agreement",
        "W5 Batch (copy).json: sample 1 (#1): a repeat: batch 'w5batch' holds it already (its sample '1') (the same "
        "source, summary and generator 'example-org/model-b'); a second copy would count twice in rates and "
        "agreement",
    ]
    # The same name again is still the batch name's refusal, as before.
    with pytest.raises(ingest.ImportFailed, match="batch 'w5batch' already exists"):
        ingest.import_files(project, [("w5batch.json", W5)])


def test_allow_repeats_imports_a_second_copy_on_purpose(project: Project) -> None:
    ingest.import_files(project, [("w5batch.json", W5)])
    report = ingest.import_files(project, [("W5 Batch (copy).json", W5)], allow_repeats=True)
    assert [batch.name for batch in report.batches] == ["W5 Batch (copy)"]
    assert Sample.objects.filter(project=project).count() == 4 and Passage.objects.filter(project=project).count() == 1


def test_the_same_samples_under_other_ids_are_still_repeats_and_another_generator_is_not(project: Project) -> None:
    ingest.import_files(project, [("w5batch.json", W5)])
    renumbered = example()
    for number, sample in enumerate(renumbered["samples"]):
        sample["sample_id"] = f"w5-{number}"
    assert refusal(project, [("again.json", json.dumps(renumbered).encode())]).repeats == 2
    other_model = example()
    other_model["samples"][0]["metadata"]["summarizer"] = "example-org/model-c"  # the same words by another model
    other_model["samples"] = other_model["samples"][:1]
    ingest.import_files(project, [("model-c.json", json.dumps(other_model).encode())])
    assert Sample.objects.filter(project=project, generator="example-org/model-c").count() == 1


def test_the_samples_jsonl_importer_refuses_repeats_too_whatever_the_passage_id(project: Project) -> None:
    ingest.import_files(project, [("plain.jsonl", lines(*PLAIN))])
    moved = [{**PLAIN[1], "passage_id": "other-id", "sample_id": "s9"}]  # the same source under another passage id
    refused = refusal(project, [("plain copy.jsonl", lines(*moved))])
    assert refused.messages == [
        "plain copy.jsonl: line 1 (sample_id 's9'): a repeat: batch 'plain-1' holds it already (its sample '2') (the "
        "same source, summary and generator 'g'); a second copy would count twice in rates and agreement"
    ]
    # And a FaithBench file of the same summary: the passage is found by its text, not by its key.
    document = {"samples": [{"sample_id": 0, "source": "One. Two.", "summary": "Two.", "metadata": {"summarizer": "g"}}]}
    assert refusal(project, [("fb.json", json.dumps(document).encode())]).repeats == 1


def test_files_of_one_upload_may_share_samples_as_an_export_of_selection_batches_does(project: Project) -> None:
    """One upload is taken as it is (a FaithBench export whose selection batches repeat samples imports back into
    a new project unchanged); the same files uploaded again later are refused, since the project holds them."""
    report = ingest.import_files(project, [("w5batch.json", W5), ("w5batch-copy.json", W5)])
    assert report.samples == 4 and Batch.objects.filter(project=project).count() == 2
    refused = refusal(project, [("w5batch-again.json", W5)])
    assert refused.repeats == 2
    assert refused.messages[0].startswith("w5batch-again.json: sample 0 (#0): a repeat: batch 'w5batch' holds it")


def test_a_files_own_repeat_is_kept_as_the_file_gives_it(project: Project) -> None:
    twice = example()
    twice["samples"].append({**twice["samples"][0], "sample_id": 7, "annotations": []})  # a consistency check
    report = ingest.import_files(project, [("twice.json", json.dumps(twice).encode())])
    assert report.samples == 3


def test_a_files_own_problems_come_first(project: Project) -> None:
    ingest.import_files(project, [("w5batch.json", W5)])
    broken = example()
    broken["samples"][1]["annotations"][0]["summary_end"] = 9999
    refused = refusal(project, [("copy.json", json.dumps(broken).encode())])
    assert refused.repeats == 0 and "out of range" in refused.messages[0]


def test_the_project_page_names_the_repeats_and_how_to_allow_them(project: Project, admin_user: Any) -> None:
    client = login(admin_user)
    client.post("/projects/demo/import/", {"files": [SimpleUploadedFile("w5batch.json", W5)]})
    page = client.post("/projects/demo/import/", {"files": [SimpleUploadedFile("W5 Batch (copy).json", W5)]},
                       follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "Nothing was imported: 2 errors." in html
    assert "W5 Batch (copy).json: sample 0 (#0): a repeat: batch 'w5batch' holds it already" in html
    assert "To import these samples again as new copies on purpose, tick 'Allow repeats'." in html
    assert 'name="allow_repeats"' in html
    assert Batch.objects.filter(project=project).count() == 1
    client.post("/projects/demo/import/", {"files": [SimpleUploadedFile("W5 Batch (copy).json", W5)],
                                           "allow_repeats": "1"})
    assert Batch.objects.filter(project=project).count() == 2


def test_the_api_names_the_repeats_and_the_option(project: Project, admin_user: Any) -> None:
    client = login(admin_user)

    def send(name: str, **fields: Any) -> Any:
        return client.post("/api/projects/demo/imports/", {"file": [SimpleUploadedFile(name, W5)],
                                                            "format": "faithbench", **fields})

    assert send("w5batch.json").status_code == 201
    refused = send("W5 Batch (copy).json")
    assert refused.status_code == 400
    body = refused.json()
    assert len(body["file"]) == 2 and "batch 'w5batch' holds it already" in body["file"][0]
    assert body["allow_repeats"] == ["send allow_repeats=true to import these samples again as new copies"]
    assert send("W5 Batch (copy).json", allow_repeats="true").status_code == 201
    assert SpanAnnotation.objects.filter(sample__project=project).count() == 8


def test_the_command_names_the_repeats_and_its_flag(tmp_path: Path) -> None:
    first, copy = tmp_path / "w5batch.json", tmp_path / "W5 Batch (copy).json"
    first.write_bytes(W5)
    copy.write_bytes(W5)
    call_command("import_faithbench", str(first), "--project", "fb")
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(copy), "--project", "fb")
    assert str(refused.value).startswith("nothing was imported: 2 errors:\n")
    assert str(refused.value).endswith("To import these samples again as new copies on purpose, add --allow-repeats.")
    call_command("import_faithbench", str(copy), "--project", "fb", "--allow-repeats")
    assert Batch.objects.filter(project__slug="fb").count() == 2
