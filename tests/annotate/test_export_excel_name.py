"""The CSV for Excel (a byte order mark first) is named apart from the plain CSV: ``<slug>-round<N>-excel.csv`` on
the page's download and the API's, so the two never overwrite each other in a downloads folder (the review: both
were ``load-round1.csv``)."""

from __future__ import annotations

from typing import Any

import pytest

from annotate.models import Batch, Job
from annotate.services import export
from tests.conftest import login

pytestmark = pytest.mark.django_db


def test_the_api_names_the_excel_csv_apart(batch: Batch, admin_user: Any) -> None:
    client = login(admin_user)
    names = {query: client.get(f"/api/projects/demo/export/?{query}")["Content-Disposition"]
             for query in ("format=csv", "format=csv&bom=1", "format=csv&bom=1&pseudonyms=true")}
    assert names == {
        "format=csv": 'attachment; filename="demo-round1.csv"',
        "format=csv&bom=1": 'attachment; filename="demo-round1-excel.csv"',
        "format=csv&bom=1&pseudonyms=true": 'attachment; filename="demo-round1-pseudonyms-excel.csv"',
    }


def test_the_page_export_job_writes_and_sends_the_excel_csv_under_its_own_name(batch: Batch, admin_user: Any) -> None:
    client = login(admin_user)
    client.post("/projects/demo/exports/", {"format": "csv", "round": "1", "bom": "on"})
    client.post("/projects/demo/exports/", {"format": "csv", "round": "1"})
    names = []
    for job in Job.objects.filter(kind=Job.Kind.EXPORT).order_by("pk"):
        done = export.run_export_job(job.pk)
        download = client.get(f"/projects/demo/exports/{job.pk}/download/")
        names.append((done.result_path.rsplit("/", 1)[-1], download["Content-Disposition"]))
    assert names == [("demo-round1-excel.csv", 'attachment; filename="demo-round1-excel.csv"'),
                     ("demo-round1.csv", 'attachment; filename="demo-round1.csv"')]
