"""The CSV export for Excel: an opt-in UTF-8 byte order mark (``bom=1`` on the API, ``--bom`` on the command, "For
Excel" on the page), without which Excel shows "Inés" as "InÃ©s". The default bytes are unchanged (scripts read
them); the mark goes before the header and nowhere else, and any other format asked with it is refused by name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from drf_spectacular.generators import SchemaGenerator

from annotate.models import Job, Membership, Project, Sample
from annotate.services import export, spans
from tests.conftest import login

pytestmark = pytest.mark.django_db

BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8, written out rather than taken from the code under test
ONLY_CSV = "the byte order mark (for Excel) is for the csv format only; {fmt} is written without one, so leave it out"


@pytest.fixture
def accented(sample: Sample, alice: Any) -> Sample:
    """A span whose text and note are not ASCII: what Excel mangles without the mark."""
    Sample.objects.filter(pk=sample.pk).update(summary="Inés Varga said the café 🌉 reopened.")
    sample.refresh_from_db()
    spans.create_span(sample, alice, round=1, start=0, end=10, labels=["Benign"], note="señal ✓")
    return sample


def download(client: Any, query: str) -> Any:
    return client.get(f"/api/projects/demo/export/?{query}")


def streamed(response: Any) -> bytes:
    assert response.status_code == 200, response.content
    return b"".join(response.streaming_content)


def test_the_api_adds_the_mark_only_when_asked_and_changes_no_other_byte(accented: Sample, admin_user: Any) -> None:
    client = login(admin_user)
    plain = streamed(download(client, "format=csv"))
    assert plain.startswith(b"batch,") and not plain.startswith(BOM)
    assert "Inés Varga" in plain.decode("utf-8") and "señal ✓" in plain.decode("utf-8")
    for asked in ("bom=1", "bom=true"):
        assert streamed(download(client, f"format=csv&{asked}")) == BOM + plain
    assert streamed(download(client, "format=csv&bom=0")) == plain


def test_the_mark_with_another_format_is_a_400_naming_bom_with_the_other_problems(
    accented: Sample, admin_user: Any
) -> None:
    client = login(admin_user)
    for fmt in ("jsonl", "faithbench"):
        answer = download(client, f"format={fmt}&bom=1")
        assert (answer.status_code, answer.json()) == (400, {"bom": [ONLY_CSV.format(fmt=fmt)]})
    both = download(client, "format=csv&bom=1&round=7")
    assert both.status_code == 400 and set(both.json()) == {"round"}  # csv takes the mark: only the round is wrong
    none = download(client, "bom=1&round=7")
    assert none.status_code == 400 and set(none.json()) == {"format", "bom", "round"}


def test_a_pairs_export_is_jsonl_and_refuses_the_mark(admin_user: Any) -> None:
    project = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
    answer = login(admin_user).get("/api/projects/pairs/export/?format=hades&bom=1")
    assert (answer.status_code, answer.json()) == (400, {"bom": [ONLY_CSV.format(fmt="hades")]})


def test_the_command_writes_the_mark_with_bom_and_refuses_it_for_another_format(
    accented: Sample, tmp_path: Path
) -> None:
    plain, marked = tmp_path / "plain.csv", tmp_path / "excel.csv"
    call_command("export", "--project", "demo", "--format", "csv", "--out", str(plain))
    call_command("export", "--project", "demo", "--format", "csv", "--out", str(marked), "--bom")
    assert not plain.read_bytes().startswith(BOM)
    assert marked.read_bytes() == BOM + plain.read_bytes()
    refused_out = tmp_path / "x.jsonl"
    with pytest.raises(CommandError) as refused:
        call_command("export", "--project", "demo", "--format", "jsonl", "--out", str(refused_out), "--bom")
    assert str(refused.value) == "--bom: " + ONLY_CSV.format(fmt="jsonl")
    assert not refused_out.exists()


def test_the_page_export_for_excel_writes_the_mark_and_says_so(accented: Sample, admin_user: Any) -> None:
    client = login(admin_user)
    form = re.search(r'<section class="card" id="exports">.*?</form>', client.get("/projects/demo/").content.decode(),
                     re.S)
    assert form is not None and re.search(r'<input type="checkbox" name="bom"> For Excel \(CSV only\)', form.group(0))
    client.post("/projects/demo/exports/", {"format": "csv", "round": "1", "bom": "on"})
    client.post("/projects/demo/exports/", {"format": "csv", "round": "1"})
    marked_job, plain_job = Job.objects.filter(kind=Job.Kind.EXPORT).order_by("pk")
    assert marked_job.options == {"format": "csv", "round": 1, "pseudonyms": False, "bom": True}
    assert plain_job.options == {"format": "csv", "round": 1, "pseudonyms": False}
    files = {}
    for job in (marked_job, plain_job):
        export.run_export_job(job.pk)
        files[job.pk] = b"".join(client.get(f"/projects/demo/exports/{job.pk}/download/").streaming_content)
    assert files[marked_job.pk] == BOM + files[plain_job.pk]
    assert files[plain_job.pk] == streamed(download(client, "format=csv"))
    table = client.get("/projects/demo/").content.decode()
    assert "CSV, a span a row · round 1 (independent) · for Excel" in table


def test_the_page_refuses_for_excel_with_another_format_and_starts_nothing(accented: Sample, admin_user: Any) -> None:
    page = login(admin_user).post("/projects/demo/exports/", {"format": "jsonl", "round": "1", "bom": "on"},
                                  follow=True)
    html = page.content.decode().replace("&#x27;", "'")
    assert "Export not started: bom: " + ONLY_CSV.format(fmt="jsonl") in html
    assert not Job.objects.filter(kind=Job.Kind.EXPORT).exists()


def test_the_schema_documents_bom_on_the_export() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    parameters = schema["paths"]["/api/projects/{slug}/export/"]["get"]["parameters"]
    [bom] = [parameter for parameter in parameters if parameter["name"] == "bom"]
    assert bom["in"] == "query" and bom["schema"] == {"type": "boolean", "default": False}
    assert "format=csv only" in bom["description"] and "Excel" in bom["description"]
