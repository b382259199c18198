"""Imported rewrites: a field the format does not define (a misspelt "batch", "reasoning " with a space) was dropped
without a word. The rewrites are still imported, and the set's notes (its page, the API's `error`, the command's
output) name each such field, how many lines had it and the first."""

from __future__ import annotations

import html
import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from annotate.models import Project, Sample
from judging.models import SyntheticRewrite, SyntheticSet
from judging.services.synthetic import output_sentences
from tests.conftest import login
from tests.judging.synthetic_scene import FIVE, add_outputs, rewrite_of

pytestmark = pytest.mark.django_db

REWRITE_FIELDS = "sample, sentence, type, rewritten, batch"


def note(name: str, lines: int, first: str) -> str:
    return (f"Field {name!r} is not defined by the synthetic rewrites format and was not imported: {lines} "
            f"line{'' if lines == 1 else 's'} had it, the first {first}; the rest of "
            f"{'the' if lines == 1 else 'each'} line was imported. The fields defined by the synthetic rewrites "
            f"format are {REWRITE_FIELDS}: check the spelling.")


def rewrites_file() -> bytes:
    """g1's five intrinsic rewrites; lines 2 and 4 carry 'reasoning ' (a space at its end), line 5 'bacth'."""
    summary = dict(FIVE)["g1"]
    sentences = [summary[start:end] for start, end in output_sentences(Sample(summary=summary))]
    records: list[dict[str, Any]] = [
        {"sample": "g1", "sentence": index, "type": "intrinsic", "rewritten": rewrite_of("intrinsic", sentence)}
        for index, sentence in enumerate(sentences)
    ]
    records[1]["reasoning "] = "negated"
    records[3]["reasoning "] = "negated"
    records[4]["bacth"] = "synthetic-batch"
    return "\n".join(json.dumps(record, ensure_ascii=False) for record in records).encode()


def test_the_set_page_names_each_unknown_field_and_its_first_line(project: Project, admin_user: Any) -> None:
    add_outputs(project)
    client = login(admin_user)
    upload = SimpleUploadedFile("mine.jsonl", rewrites_file())
    response = client.post(reverse("judging-synthetic-import", args=[project.slug]),
                           {"name": "imp", "file": upload, "seed": "0"}, follow=True)
    assert response.status_code == 200
    page = html.unescape(response.content.decode())
    synthetic_set = SyntheticSet.objects.get(project=project, name="imp")
    assert synthetic_set.rewrites.filter(status=SyntheticRewrite.Status.OK).count() == 5
    assert f'data-role="set-note">{note("reasoning ", 2, "mine.jsonl, line 2")}</p>' in page
    assert f'data-role="set-note">{note("bacth", 1, "mine.jsonl, line 5")}</p>' in page
    api = client.get(f"/api/projects/{project.slug}/synthetic-sets/").json()
    assert api[0]["error"].splitlines() == [note("reasoning ", 2, "mine.jsonl, line 2"),
                                            note("bacth", 1, "mine.jsonl, line 5")]


def test_the_command_prints_them(project: Project, tmp_path: Path) -> None:
    add_outputs(project)
    path = tmp_path / "rewrites.jsonl"
    path.write_bytes(rewrites_file())
    out = StringIO()
    call_command("synthetic_set", "--project", project.slug, "--name", "cmd", "--import", str(path), stdout=out)
    printed = out.getvalue().splitlines()
    assert note("reasoning ", 2, "rewrites.jsonl, line 2") in printed
    assert note("bacth", 1, "rewrites.jsonl, line 5") in printed
    assert SyntheticSet.objects.get(name="cmd").rewrites.count() == 5
