"""What an import and the curation page say: nouns agree with their numbers, and long values in the span
importer's messages are cut the same way (``checks._shown``) wherever they are quoted."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotate.models import Assignment, Project, Sample, SpanAnnotation
from annotate.services import freeze, rounds, spans
from annotate.services.ingest.checks import _shown
from tests.annotate.test_ingest import example
from tests.conftest import login

LONG_LABEL = "Unwanted.Made-up-" + "x" * 283  # 300 characters


def refusal(tmp_path: Path, document: dict[str, Any]) -> str:
    path = tmp_path / "batch_1.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(CommandError) as refused:
        call_command("import_faithbench", str(path), "--project", "fb")
    assert not Sample.objects.exists()
    return str(refused.value)


@pytest.mark.django_db
def test_a_long_unknown_label_is_cut_as_the_long_sample_id_is(tmp_path: Path) -> None:
    document = example()
    sample_id = "s" * 150
    document["samples"][0]["sample_id"] = sample_id
    document["samples"][0]["annotations"][0]["label"] = [LONG_LABEL]
    message = refusal(tmp_path, document)
    assert f"sample {_shown(sample_id)} (#0): annotation #0 (annot_id 1): field 'label': unknown label " \
           f"{_shown(LONG_LABEL)}; known labels: " in message
    assert LONG_LABEL not in message and _shown(LONG_LABEL).endswith("...") and len(_shown(LONG_LABEL)) == 60


@pytest.mark.django_db
def test_a_long_span_quote_that_does_not_match_is_cut_too(tmp_path: Path) -> None:
    document = example()
    quoted = "nine weeks " + "y" * 300
    document["samples"][0]["annotations"][0]["summary_span"] = quoted
    message = refusal(tmp_path, document)
    assert f"field 'summary_span' {_shown(quoted)} does not match the text at 51..61, which is 'nine weeks'" in message
    assert quoted not in message


@pytest.mark.django_db
def test_one_batch_is_one_batch_on_the_page_and_in_the_command(project: Project, admin_user: Any,
                                                               tmp_path: Path) -> None:
    document = example()
    document["samples"] = document["samples"][:1]
    document["samples"][0]["annotations"] = document["samples"][0]["annotations"][:1]
    upload = SimpleUploadedFile("one.json", json.dumps(document).encode())
    page = login(admin_user).post("/projects/demo/import/", {"files": upload}, follow=True).content.decode()
    assert "Imported 1 batch, 1 sample and 1 span; sentence embedding runs in the background." in page
    path = tmp_path / "again.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    out = StringIO()
    call_command("import_faithbench", str(path), "--project", "fb", stdout=out)
    assert out.getvalue().startswith("imported 1 batch, 1 sample, 1 span, 1 annotator (by-name) into 'fb'; ")


@pytest.mark.django_db
def test_the_curation_page_counts_stale_gold_labels_in_the_singular_and_the_plural(
    batch: Any, alice: Any, bob: Any, admin_user: Any
) -> None:
    made = []
    for sample in batch.samples.order_by("position")[:2]:
        span = spans.create_span(sample, alice, round=1, start=0, end=7, labels=["Benign"])
        made.append(span)
    for person in (alice, bob):
        Assignment.objects.filter(batch=batch, annotator=person).update(status=Assignment.Status.SUBMITTED)
    for span in made:
        rounds.adjudicate_sample(span.sample, admin_user, span_ids=[span.pk])
    freeze.reopen_round(Assignment.objects.get(batch=batch, annotator=alice), admin_user, "fix")
    curation = reverse("curation", args=["demo"])
    for count, wording in ((1, "1 gold label was built"), (2, "2 gold labels were built")):
        span = SpanAnnotation.objects.get(pk=made[count - 1].pk)
        spans.update_span(span, version=span.version, changes={"note": "changed"})
        page = login(admin_user).get(curation).content.decode()
        assert f"{wording} from spans that changed afterwards" in page
        assert "review it again" in page if count == 1 else "review them again" in page
