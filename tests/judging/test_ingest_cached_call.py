"""Importing what the export writes for an answer from the call cache: its own latency and tokens are null (no call
was made) and the earlier call's are ``cached_call_latency``, ``cached_call_input_tokens`` and
``cached_call_output_tokens``; the import keeps those, so the row exports back as it came. A file written before those
keys (the earlier call's figures as the line's own) still imports; a figure given both ways, or a cached_call_*
figure on a judgement that made its own call, is refused by line and field. The export's ``sample_id`` and
``sample_external_id`` are accepted and left aside (the sample is found by ``sample``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import Batch
from judging.models import Judgement
from judging.services.export import export_lines
from judging.services.ingest import JudgementImportFailed, import_judgements

pytestmark = pytest.mark.django_db


def jsonl(*rows: dict[str, Any]) -> bytes:
    return "\n".join(json.dumps(row) for row in rows).encode()


def exported_rows(batch: Batch) -> dict[str, dict[str, Any]]:
    lines = export_lines(batch.project, what="judgements", format="jsonl")
    return {row["sample"]: row for row in map(json.loads, lines)}


def test_cached_call_figures_import_and_export_back_as_they_came(batch: Batch) -> None:
    new_style = {"sample": "0", "sample_id": 987654, "sample_external_id": "0", "judge": "j", "score": 4,
                 "cached": True, "latency": None, "input_tokens": None, "output_tokens": None, "cost": 0.0,
                 "cached_call_latency": 2.5, "cached_call_input_tokens": 900, "cached_call_output_tokens": 120}
    old_style = {"sample": "1", "judge": "j", "score": 3, "cached": True, "latency": 1.25, "input_tokens": 700,
                 "output_tokens": 60, "cost": 0.0}
    own_call = {"sample": "2", "judge": "j", "score": 5, "latency": 3.0, "input_tokens": 500, "output_tokens": 40,
                "cost": 0.001}
    import_judgements(batch.project, [("judged.jsonl", jsonl(new_style, old_style, own_call))])

    stored = {j.sample.external_id: j for j in Judgement.objects.select_related("sample")}
    assert (stored["0"].latency_seconds, stored["0"].input_tokens, stored["0"].output_tokens) == (2.5, 900, 120)
    rows = exported_rows(batch)
    figures = ("latency", "input_tokens", "output_tokens", "cost", "cached_call_latency", "cached_call_input_tokens",
               "cached_call_output_tokens")
    assert [rows["0"][name] for name in figures] == [None, None, None, 0.0, 2.5, 900, 120]
    assert [rows["1"][name] for name in figures] == [None, None, None, 0.0, 1.25, 700, 60]
    assert [rows["2"][name] for name in figures] == [3.0, 500, 40, 0.001, None, None, None]


@pytest.mark.parametrize(("row", "message"), [
    ({"sample": "0", "judge": "j", "score": 4, "cached_call_latency": 2.0},
     "field 'cached_call_latency' is only for an answer from the call cache (cached true)"),
    ({"sample": "0", "judge": "j", "score": 4, "cached": False, "cached_call_input_tokens": 10},
     "field 'cached_call_input_tokens' is only for an answer from the call cache (cached true)"),
    ({"sample": "0", "judge": "j", "score": 4, "cached": True, "output_tokens": 5, "cached_call_output_tokens": 5},
     "fields 'output_tokens' and 'cached_call_output_tokens' are both given"),
    ({"sample": "0", "judge": "j", "score": 4, "cached": True, "cached_call_input_tokens": 1.5},
     "field 'cached_call_input_tokens' must be a whole number"),
])
def test_a_cached_call_figure_that_cannot_be_meant_is_refused_by_line_and_field(
    batch: Batch, row: dict[str, Any], message: str
) -> None:
    with pytest.raises(JudgementImportFailed) as caught:
        import_judgements(batch.project, [("judged.jsonl", jsonl({"sample": "1", "judge": "j", "score": 3}, row))])
    assert len(caught.value.messages) == 1
    assert caught.value.messages[0].startswith(f"judged.jsonl: line 2: {message}")
    assert not Judgement.objects.exists()
