"""An imported "?" label is no label: DESIGN.md's item labels are H and N (HaDes 1 and 0), its unknown is HaDes -1,
and "?" is a judge's abstention, not an item's label. Such an item waits in the pool and exports as the other
unlabelled items do: label null in the pair format, hallucination -1 in HaDes; both import back the same."""

from __future__ import annotations

import json
from typing import Any

import pytest

from annotate.models import PairItem, Project
from annotate.services.pairs.export import export_pairs
from annotate.services.pairs.ingest import PairImportFailed, import_pairs
from tests.pairs.factories_formats import jsonl, pair_line

pytestmark = pytest.mark.django_db

OTHER = {"perturbed": "A second text, with its own words.", "original": "A first text, with its own words.",
         "perturbed_start": 2, "perturbed_end": 8, "perturbed_words": "second",
         "original_start": 2, "original_end": 7, "original_words": "first"}


def states(project: Project) -> dict[str, tuple[str, str]]:
    return {item.external_id: (item.state, item.label) for item in PairItem.objects.filter(project=project)}


def test_a_question_mark_is_no_label_and_exports_like_every_unlabelled_item(pairs_project: Project,
                                                                            admin_user: Any) -> None:
    content = jsonl(pair_line(item_id="unknown", label="?"), pair_line(item_id="labelled", label="H", **OTHER))
    report = import_pairs(pairs_project, [("p.jsonl", content)], "pairs")
    assert (report.labelled, report.pool) == (1, 1)
    assert states(pairs_project) == {"unknown": (PairItem.State.POOL, ""), "labelled": (PairItem.State.LABELLED, "H")}

    rows = {row["item_id"]: row for row in map(json.loads, export_pairs(pairs_project, "pairs").splitlines())}
    assert (rows["unknown"]["label"], rows["unknown"]["consensus"]) == (None, None)
    assert (rows["labelled"]["label"], rows["labelled"]["consensus"]) == ("H", "H")
    hades = [json.loads(line)["hallucination"] for line in export_pairs(pairs_project, "hades").splitlines()]
    assert hades == [-1, 1]

    # The pair export imports back with the same meaning: one item in the pool, one labelled H.
    import_pairs("again", [("export.jsonl", export_pairs(pairs_project, "pairs").encode())], "pairs", user=admin_user)
    assert states(Project.objects.get(slug="again")) == states(pairs_project)


def test_hades_takes_no_question_mark_and_the_pair_format_no_other_label(pairs_project: Project) -> None:
    row = {"replaced": "the bridge carries a ===railway=== .", "replaced_ids": [4, 4], "hallucination": "?"}
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("h.jsonl", jsonl(row))], "hades")
    assert caught.value.messages == ["h.jsonl: line 1: field 'hallucination' must be 1, 0 or -1, found the string '?'"]
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(pairs_project, [("p.jsonl", jsonl(pair_line(label="unknown")))], "pairs")
    assert caught.value.messages == ['p.jsonl: line 1: field \'label\' must be "H", "N" or "?" (or null), found the string \'unknown\'']
    assert not PairItem.objects.exists()
