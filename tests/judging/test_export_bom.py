"""The judgements and audits CSV for Excel: the span export's opt-in UTF-8 byte order mark (``bom=1`` on the API and
the pages, ``--bom`` on ``export_judgements``, "For Excel (CSV only)" and "CSV for Excel" on the pages). The default
bytes are unchanged; the mark goes before the header and nowhere else; jsonl asked with it is refused, naming bom,
with the span export's words, and nothing is written."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from annotate.models import Batch
from judging.models import Audit, AuditItem
from tests.conftest import login
from tests.judging.audit_helpers import judge_sample, make_auditor, make_judge, make_run

pytestmark = pytest.mark.django_db

BOM = b"\xef\xbb\xbf"  # U+FEFF in UTF-8, written out rather than taken from the code under test
ONLY_CSV = "the byte order mark (for Excel) is for the csv format only; {fmt} is written without one, so leave it out"
WHAT = ("judgements", "audits")


@pytest.fixture
def accented(batch: Batch) -> dict[str, Any]:
    """A judgement's reasoning and an audit's note that are not ASCII: what Excel mangles without the mark."""
    project = batch.project
    sample = batch.samples.order_by("position").first()
    judge_sample(make_run(make_judge(project, "juge-é")), sample, score=2, reasoning="Inés Varga: café 🌉 fermé")
    auditor = make_auditor(project, "audrey")
    now = timezone.now()
    Audit.objects.create(item=AuditItem.objects.create(project=project, sample=sample), auditor=auditor, score=2,
                         note="señal ✓", served_at=now - timedelta(seconds=5), answered_at=now, seconds=5.0)
    return {"auditor": auditor}


def page_url(what: str) -> str:
    return reverse(f"judging-export-{what}", args=["demo"])


def api_url(what: str) -> str:
    return f"/api/projects/demo/{what}/export/"


def streamed(response: Any) -> bytes:
    assert response.status_code == 200, response.content
    assert response.streaming
    return b"".join(response.streaming_content)


@pytest.mark.parametrize("what", WHAT)
@pytest.mark.parametrize("url", [page_url, api_url])
def test_the_mark_comes_only_when_asked_and_changes_no_other_byte(
    accented: dict[str, Any], admin_user: Any, what: str, url: Any
) -> None:
    client = login(admin_user)
    plain = streamed(client.get(url(what), {"format": "csv"}))
    assert plain.startswith(b"sample,batch," if what == "judgements" else b"item,sample,")  # the header, unmarked
    text = plain.decode("utf-8")
    assert ("Inés Varga: café 🌉 fermé" if what == "judgements" else "señal ✓") in text
    for asked in ("1", "true"):
        marked = client.get(url(what), {"format": "csv", "bom": asked})
        assert marked["Content-Type"] == "text/csv; charset=utf-8"
        body = streamed(marked)
        assert body[:3] == BOM and body[3:] == plain
    assert streamed(client.get(url(what), {"format": "csv", "bom": "0"})) == plain


def test_an_auditor_gets_their_own_audits_for_excel(accented: dict[str, Any]) -> None:
    client = login(accented["auditor"])
    plain = streamed(client.get(page_url("audits"), {"format": "csv"}))
    assert "señal ✓" in plain.decode("utf-8")
    assert streamed(client.get(page_url("audits"), {"format": "csv", "bom": "1"})) == BOM + plain


@pytest.mark.parametrize("what", WHAT)
def test_the_api_refuses_the_mark_with_jsonl_naming_bom_beside_the_other_problems(
    accented: dict[str, Any], admin_user: Any, what: str
) -> None:
    client = login(admin_user)
    for query in ({"format": "jsonl", "bom": "1"}, {"bom": "1"}):  # no format is jsonl
        answer = client.get(api_url(what), query)
        assert (answer.status_code, answer.json()) == (400, {"bom": [ONLY_CSV.format(fmt="jsonl")]})
    both = client.get(api_url(what), {"format": "xml", "bom": "1"})
    assert both.status_code == 400 and set(both.json()) == {"format", "bom"}
    assert both.json()["bom"] == [ONLY_CSV.format(fmt="xml")]
    assert client.get(api_url(what), {"format": "csv", "bom": "maybe"}).status_code == 400


@pytest.mark.parametrize("what", WHAT)
def test_the_pages_refuse_the_mark_with_jsonl_and_a_yes_or_no_they_cannot_read(
    accented: dict[str, Any], admin_user: Any, what: str
) -> None:
    client = login(admin_user)
    refused = client.get(page_url(what), {"format": "jsonl", "bom": "1"})
    assert refused.status_code == 400 and not refused.streaming
    assert refused.content.decode() == "Not exported: bom: " + ONLY_CSV.format(fmt="jsonl")
    unread = client.get(page_url(what), {"format": "csv", "bom": "maybe"})
    assert unread.status_code == 400 and unread.content.decode().startswith("Not exported: bom: 'maybe' is not yes or no")
    # The judges page's form sends an unticked box as nothing at all: the plain file.
    assert not streamed(client.get(page_url(what), {"format": "csv", "bom": ""})).startswith(BOM)


@pytest.mark.parametrize("what", WHAT)
def test_the_command_writes_the_mark_with_bom_and_refuses_it_for_jsonl(
    accented: dict[str, Any], tmp_path: Path, what: str
) -> None:
    plain, marked = tmp_path / "plain.csv", tmp_path / "excel.csv"
    call_command("export_judgements", "--project", "demo", "--what", what, "--format", "csv", "--out", str(plain))
    call_command("export_judgements", "--project", "demo", "--what", what, "--format", "csv", "--out", str(marked),
                 "--bom")
    assert not plain.read_bytes().startswith(BOM)
    assert marked.read_bytes()[:3] == BOM and marked.read_bytes()[3:] == plain.read_bytes()
    refused_out = tmp_path / "x.jsonl"
    with pytest.raises(CommandError) as refused:
        call_command("export_judgements", "--project", "demo", "--what", what, "--format", "jsonl",
                     "--out", str(refused_out), "--bom")
    assert str(refused.value) == "--bom: " + ONLY_CSV.format(fmt="jsonl")
    assert not refused_out.exists()


def test_the_pages_offer_the_csv_for_excel(accented: dict[str, Any], admin_user: Any) -> None:
    judges = login(admin_user).get(reverse("judging-judges", args=["demo"])).content.decode()
    assert '<input type="checkbox" name="bom" value="1"> For Excel (CSV only)' in judges
    excel_link = f'href="{page_url("audits")}?format=csv&amp;bom=1" data-format="csv-excel"'
    assert excel_link in judges
    audit_page = login(accented["auditor"]).get(reverse("judging-audit", args=["demo"])).content.decode()
    assert excel_link in audit_page


def test_the_schema_documents_bom_on_both_downloads() -> None:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    for what in WHAT:
        parameters = schema["paths"][f"/api/projects/{{slug}}/{what}/export/"]["get"]["parameters"]
        [bom] = [parameter for parameter in parameters if parameter["name"] == "bom"]
        assert bom["in"] == "query" and bom["schema"] == {"type": "boolean", "default": False}
        assert "format=csv only" in bom["description"] and "Excel" in bom["description"]
