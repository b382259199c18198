"""Moving a judged pairs project: its pair export imported elsewhere keeps each consensus as the item's label with
consensus_as_label (the command's --consensus-as-label, the upload form's checkbox, the API's field), and without
it the import's warnings count the lines whose consensus was left out, name the first and the option. Votes are
never imported."""

from __future__ import annotations

import html
import json
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.utils import timezone

from annotate.models import Membership, PairConfig, PairItem, PairJudgement, Project
from annotate.services.pairs.export import export_pairs
from annotate.services.pairs.ingest import PairImportFailed, import_pairs
from tests.conftest import login
from tests.pairs.conftest import make_pair_items
from tests.pairs.factories_formats import HADES_EXAMPLE, jsonl, pair_line

pytestmark = pytest.mark.django_db

# The source project's items, by external id: (state, label) after judging.
JUDGED = {
    "i0": (PairItem.State.CONSENSUS, "H"),
    "i1": (PairItem.State.CONSENSUS, "N"),
    "i2": (PairItem.State.NO_CONSENSUS, ""),
    "i3": (PairItem.State.OPEN, ""),  # drawn, not judged yet: consensus null
}
WARNING = (
    "2 lines carried a consensus (H or N, from judging in the project the file was exported from) that was not "
    "imported, the first export.jsonl: line 1: their items are in the pool, to be judged again. To keep each "
    "consensus as its item's label, import the file again into a new project with the option consensus_as_label "
    "(import_pairs --consensus-as-label; on the import form, 'Take each exported consensus as the item's label'). "
    "Votes are never imported, with the option or without it: figures such as pair_agreement start afresh."
)
WITHOUT = "imported 4 items (0 labelled, 4 in the pool) in 4 perturbed texts, 4 originals, into 'moved'"
WITH = ("imported 4 items (2 labelled, 2 in the pool) in 4 perturbed texts, 4 originals, into 'kept'; "
        "2 labels taken from the lines' consensus")
POOLED = {"i0": ("pool", ""), "i1": ("pool", ""), "i2": ("pool", ""), "i3": ("pool", "")}
LABELLED = {"i0": ("labelled", "H"), "i1": ("labelled", "N"), "i2": ("pool", ""), "i3": ("pool", "")}


@pytest.fixture
def judged(pairs_project: Project, alice: Any, bob: Any) -> Project:
    """The pairs project with four items in round 1: consensus H, consensus N, no consensus, not judged yet."""
    items = make_pair_items(pairs_project, 4)
    now = timezone.now()
    votes = {"i0": ("H", "H"), "i1": ("N", "N"), "i2": ("H", "N")}
    for item in items:
        state, label = JUDGED[item.external_id]
        PairItem.objects.filter(pk=item.pk).update(state=state, label=label)
        for judge, vote in zip((alice, bob), votes.get(item.external_id, ()), strict=False):
            PairJudgement.objects.create(item=item, judge=judge, round=item.round, label=vote,
                                         served_at=now - timedelta(seconds=20), answered_at=now, seconds=20)
    return pairs_project


@pytest.fixture
def moved(admin_user: Any) -> tuple[Project, Project]:
    """The empty pairs projects the export moves to: 'moved' without the option, 'kept' with it."""
    made = []
    for slug in ("moved", "kept"):
        project = Project.objects.create(name=slug.title(), slug=slug, kind=Project.Kind.PAIRS)
        PairConfig.objects.create(project=project)
        Membership.objects.create(project=project, user=admin_user, role=Membership.Role.ADMIN)
        made.append(project)
    return made[0], made[1]


def exported(project: Project) -> bytes:
    return export_pairs(project, "pairs").encode()


def items_of(slug: str) -> dict[str, tuple[str, str]]:
    return {item.external_id: (item.state, item.label) for item in PairItem.objects.filter(project__slug=slug)}


def test_the_command_warns_without_the_option_and_keeps_the_consensus_with_it(judged: Project, tmp_path: Path) -> None:
    path = tmp_path / "export.jsonl"
    call_command("export", "--project", judged.slug, "--format", "pairs", "--out", str(path), stdout=StringIO())
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [(row["item_id"], row["label"], row["consensus"]) for row in rows] == [
        ("i0", None, "H"), ("i1", None, "N"), ("i2", None, "none"), ("i3", None, None)]
    out = StringIO()
    call_command("import_pairs", str(path), "--project", "moved", stdout=out)
    # New projects, made by the command; it names each file as it was given.
    assert out.getvalue().splitlines() == [f"{WITHOUT} (new project)",
                                           f"warning: {WARNING.replace('export.jsonl', str(path))}"]
    assert items_of("moved") == POOLED

    out = StringIO()
    call_command("import_pairs", str(path), "--project", "kept", "--consensus-as-label", stdout=out)
    assert out.getvalue().splitlines() == [WITH.replace("'kept';", "'kept' (new project);")]
    assert items_of("kept") == LABELLED
    # Votes are never imported: the new project's judging starts afresh.
    kept = Project.objects.get(slug="kept")
    assert not PairJudgement.objects.filter(item__project=kept).exists()
    # Exported again, the kept items carry their consensus as a label of their own.
    rows = [json.loads(line) for line in export_pairs(kept, "pairs").splitlines()]
    assert {row["item_id"]: (row["label"], row["consensus"], row["votes"]["H"] + row["votes"]["N"]) for row in rows} \
        == {"i0": ("H", "H", 0), "i1": ("N", "N", 0), "i2": (None, None, 0), "i3": (None, None, 0)}


def test_the_api_says_the_same_in_warnings_and_counts(judged: Project, moved: Any, admin_user: Any) -> None:
    admin = login(admin_user)

    def post(slug: str, **fields: Any) -> Any:
        upload = SimpleUploadedFile("export.jsonl", exported(judged), content_type="application/octet-stream")
        return admin.post(f"/api/projects/{slug}/imports/", {"file": [upload], "format": "pairs", **fields})

    answer = post("moved")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["summary"], body["warnings"], body["labelled"], body["pool"]) == (
        f"I{WITHOUT[1:]}.", [WARNING], 0, 4)
    assert items_of("moved") == POOLED

    answer = post("kept", consensus_as_label="true")
    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert (body["summary"], body["warnings"], body["labelled"], body["pool"]) == (f"I{WITH[1:]}.", [], 2, 2)
    assert items_of("kept") == LABELLED


def test_a_span_project_refuses_the_option_by_name(project: Project, admin_user: Any) -> None:
    upload = SimpleUploadedFile("s.jsonl", b'{"source": "One.", "summary": "One.", "generator": "g"}\n')
    answer = login(admin_user).post(f"/api/projects/{project.slug}/imports/",
                                    {"file": [upload], "format": "jsonl", "consensus_as_label": "true"})
    assert answer.status_code == 400
    assert answer.json() == {"consensus_as_label": [
        f"consensus_as_label is not read for {project.slug!r}, a spans project (span annotation); leave it out "
        "(nothing was imported)"]}


def test_the_upload_form_says_the_same_and_has_the_checkbox(judged: Project, moved: Any, admin_user: Any) -> None:
    admin = login(admin_user)
    page = admin.get("/projects/moved/").content.decode()
    assert 'name="consensus_as_label"' in page and "Take each exported" in page

    def post(slug: str, **fields: Any) -> str:
        upload = SimpleUploadedFile("export.jsonl", exported(judged))
        response = admin.post(f"/projects/{slug}/pairs/import/", {"format": "pairs", "files": [upload], **fields},
                              follow=True)
        return html.unescape(response.content.decode())

    page = post("moved")
    assert f"I{WITHOUT[1:]}." in page and WARNING in page
    assert items_of("moved") == POOLED

    page = post("kept", consensus_as_label="on")
    assert f"I{WITH[1:]}." in page and "carried a consensus" not in page
    assert items_of("kept") == LABELLED


def test_a_line_s_own_label_wins_and_none_or_null_stay_unlabelled(db: None) -> None:
    lines = jsonl(
        pair_line(item_id="own", label="N", consensus="H"),  # the line's own label wins
        pair_line(item_id="asked", label="?", consensus="H"),  # "?" is no label: the consensus is taken
        pair_line(item_id="split", consensus="none"),
        pair_line(item_id="open", consensus=None),
    )
    report = import_pairs("taken", [("p.jsonl", lines)], "pairs", consensus_as_label=True)
    assert (report.labelled, report.pool, report.labelled_from_consensus, report.warnings()) == (2, 2, 1, [])
    assert items_of("taken") == {"own": ("labelled", "N"), "asked": ("labelled", "H"), "split": ("pool", ""),
                                 "open": ("pool", "")}
    # Without the option, the line labelled by its own label is not counted: its consensus was not what was lost.
    report = import_pairs("left", [("p.jsonl", lines)], "pairs")
    assert (report.labelled, report.pool) == (1, 3)
    assert [line.where for line in report.unread_consensus] == ["p.jsonl: line 2"]
    assert report.warnings()[0].startswith("1 line carried a consensus (H or N, from judging in the project the file "
                                           "was exported from) that was not imported, the first p.jsonl: line 2: "
                                           "its item is in the pool")


def test_the_option_refuses_a_consensus_an_export_never_writes_and_other_formats(db: None) -> None:
    with pytest.raises(PairImportFailed) as caught:
        import_pairs("bad", [("p.jsonl", jsonl(pair_line(item_id="x", consensus="yes")))], "pairs",
                     consensus_as_label=True)
    assert caught.value.messages == [
        'p.jsonl: line 1: field \'consensus\' must be "H", "N", "none" or null (what an export writes), found '
        "the string 'yes'"]
    # Without the option the field is not read, as before.
    assert import_pairs("fine", [("p.jsonl", jsonl(pair_line(item_id="x", consensus="yes")))], "pairs").pool == 1
    with pytest.raises(PairImportFailed) as caught:
        import_pairs("h", [("h.jsonl", HADES_EXAMPLE.read_bytes())], "hades", consensus_as_label=True)
    assert caught.value.messages == [
        "consensus_as_label: only for pair files (format pairs), whose exported lines carry a consensus; hades files "
        "carry none"]
    assert not Project.objects.filter(slug__in=["bad", "h"]).exists()
