"""The judgements' and audits' CSV for Excel is named apart from the plain CSV (``-excel.csv``), on the judging page's
download and the API's, as the span export names it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import login
from tests.judging.test_export_bom import accented, api_url, page_url  # noqa: F401  (accented: a fixture)

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("what", ["judgements", "audits"])
@pytest.mark.parametrize("url", [page_url, api_url])
def test_the_excel_csv_is_named_apart(accented: dict[str, Any], admin_user: Any, what: str, url: Any) -> None:  # noqa: F811
    client = login(admin_user)
    plain = client.get(url(what), {"format": "csv"})["Content-Disposition"]
    marked = client.get(url(what), {"format": "csv", "bom": "1"})["Content-Disposition"]
    assert (plain, marked) == (f'attachment; filename="demo-{what}.csv"', f'attachment; filename="demo-{what}-excel.csv"')
