"""Helpers of the pair import and export tests: file contents and a picture of the pair rows in the database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from annotate.models import Membership, PairConfig, PairItem, PairJudgement, PairOriginal, PerturbedText, Project
from annotate.services.pairs.ingest import PairImportFailed, import_pairs

# A byte-for-byte copy of shared/formats/hades_example.jsonl, the team's made-up HaDes example.
HADES_EXAMPLE = Path(__file__).with_name("hades_example.jsonl")

ORIGINAL = "The bridge opened in 1911. It carries a footpath."
PERTURBED = "The bridge closed in 1911. It carries a railway."


def jsonl(*rows: Any) -> bytes:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def pair_line(**changes: Any) -> dict[str, Any]:
    """A valid pair-format line: 'opened' -> 'closed' at 11..17 in both texts; ``changes`` override or drop keys."""
    row: dict[str, Any] = {
        "item_id": "i1", "original": ORIGINAL, "perturbed": PERTURBED,
        "original_start": 11, "original_end": 17, "perturbed_start": 11, "perturbed_end": 17,
        "original_words": "opened", "perturbed_words": "closed",
    }
    for key, value in changes.items():
        if value is ...:
            row.pop(key)
        else:
            row[key] = value
    return row


def snapshot() -> dict[str, Any]:
    """Every pair row's id and the projects, memberships and settings: equal before and after a failed import."""
    return {
        "projects": sorted(Project.objects.values_list("slug", "kind")),
        "memberships": Membership.objects.count(),
        "configs": PairConfig.objects.count(),
        "originals": sorted(PairOriginal.objects.values_list("id", "external_id", "text")),
        "texts": sorted(PerturbedText.objects.values_list("id", "text", "group")),
        "items": sorted(PairItem.objects.values_list("id", "external_id", "state", "label")),
        "judgements": PairJudgement.objects.count(),
    }


def hades_rows() -> list[dict[str, Any]]:
    """The HaDes example's rows, to change one before writing them back as a file."""
    return [json.loads(line) for line in HADES_EXAMPLE.read_text().splitlines() if line]


def refused(project: Project, content: bytes, fmt: str, name: str = "in.jsonl") -> list[str]:
    """The problems an import of one file is refused with; the test fails if it is taken or writes anything."""
    before = snapshot()
    with pytest.raises(PairImportFailed) as caught:
        import_pairs(project, [(name, content)], fmt)
    assert snapshot() == before
    return caught.value.messages
