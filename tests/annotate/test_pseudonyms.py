"""One pseudonym scheme per project: the round-2 page and exports call a person by the same letter."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Assignment, Batch, Membership, Passage, Project, Pseudonym, Sample
from annotate.services import rounds, spans
from annotate.services.pseudonyms import pseudonym_label, pseudonyms_for
from tests.conftest import SOURCE, login, make_user

pytestmark = pytest.mark.django_db


def test_labels_run_from_a_to_z_then_by_number() -> None:
    assert [pseudonym_label(i) for i in (0, 1, 25, 26, 27)] == [
        "Annotator A", "Annotator B", "Annotator Z", "Annotator 27", "Annotator 28",
    ]


def test_letters_follow_usernames_not_database_ids_and_never_change() -> None:
    project = Project.objects.create(name="P", slug="p")
    zoe, amy, mia = make_user("zoe"), make_user("amy"), make_user("mia")  # ids: zoe < amy < mia
    assert zoe.pk < amy.pk < mia.pk
    assert pseudonyms_for(project, [zoe, mia, amy]) == {amy.pk: "Annotator A", mia.pk: "Annotator B",
                                                       zoe.pk: "Annotator C"}
    # A newcomer gets the next free letter, even one whose name sorts first; nobody else's letter moves.
    aaron = make_user("aaron")
    assert pseudonyms_for(project, [aaron.pk, zoe.pk]) == {aaron.pk: "Annotator D", zoe.pk: "Annotator C"}
    assert pseudonyms_for(project, [amy]) == {amy.pk: "Annotator A"}
    # Letters belong to a project: another project starts again at A.
    other = Project.objects.create(name="Q", slug="q")
    assert pseudonyms_for(other, [zoe]) == {zoe.pk: "Annotator A"}
    assert Pseudonym.objects.filter(project=project).count() == 4


def test_a_letter_taken_by_someone_else_is_skipped() -> None:
    project = Project.objects.create(name="P", slug="p")
    first, second = make_user("bea"), make_user("cal")
    Pseudonym.objects.create(project=project, user=second, label="Annotator A")  # given out earlier
    assert pseudonyms_for(project, [first, second]) == {first.pk: "Annotator B", second.pk: "Annotator A"}


def round_two_batch() -> dict[str, Any]:
    """zoe is created before amy (smaller id); both finished round 1 with one span each."""
    zoe, amy, admin = make_user("zoe"), make_user("amy"), make_user("root", is_staff=True)
    project = Project.objects.create(name="Demo", slug="demo")
    for user, role in ((zoe, "annotator"), (amy, "annotator"), (admin, "admin")):
        Membership.objects.create(project=project, user=user, role=role)
    batch = Batch.objects.create(project=project, name="batch-1", reveal_names=False)
    passage = Passage.objects.create(project=project, external_id="p1", text=SOURCE)
    sample = Sample.objects.create(project=project, passage=passage, batch=batch, external_id="s1",
                                   summary="The bridge reopened after nine weeks.", generator="g")
    for user in (zoe, amy):
        Assignment.objects.create(batch=batch, annotator=user)
    spans.create_span(sample, zoe, round=1, start=0, end=10, labels=["Benign"])
    spans.create_span(sample, amy, round=1, start=27, end=37, labels=["Unwanted.Intrinsic"])
    for user in (zoe, amy):
        spans.mark_sample_done(sample, user, round=1, done=True)
    rounds.open_reconciliation_round(batch, reveal_names=False)
    return {"zoe": zoe, "amy": amy, "admin": admin, "project": project, "sample": sample}


def test_round_two_page_and_export_use_the_same_letters(tmp_path: Path) -> None:
    scene = round_two_batch()
    # What zoe sees of amy on the round-2 page, and amy of zoe.
    seen_by_zoe = login(scene["zoe"]).get(f"/api/samples/{scene['sample'].pk}/others/").json()
    seen_by_amy = login(scene["amy"]).get(f"/api/samples/{scene['sample'].pk}/others/").json()
    assert [span["annotator"] for span in seen_by_zoe["spans"]] == ["Annotator A"]  # amy, though her id is larger
    assert [span["annotator"] for span in seen_by_amy["spans"]] == ["Annotator B"]  # zoe
    assert seen_by_zoe["worst_labels"] == {"Annotator A": "Unwanted", "Annotator B": "Benign"}
    assert "amy" not in json.dumps(seen_by_zoe) and "zoe" not in json.dumps(seen_by_amy)

    table = tmp_path / "round1.csv"
    call_command("export", "--project", "demo", "--format", "csv", "--round", "1", "--out", str(table), "--pseudonyms")
    by_span = {(row["summary_start"], row["annotator"]) for row in csv.DictReader(table.open())}
    assert by_span == {("27", "Annotator A"), ("0", "Annotator B")}
    lines = tmp_path / "round1.jsonl"
    call_command("export", "--project", "demo", "--format", "jsonl", "--out", str(lines), "--pseudonyms")
    record = json.loads(lines.read_text().splitlines()[0])
    assert record["worst_label_by_annotator"] == {"Annotator A": "Unwanted", "Annotator B": "Benign"}
    assert {a["annotator_name"] for a in record["annotations"]} == {"Annotator A", "Annotator B"}
    assert "zoe" not in lines.read_text() and "amy" not in lines.read_text()


def test_an_export_first_fixes_the_letters_the_page_shows_later(tmp_path: Path) -> None:
    scene = round_two_batch()
    Pseudonym.objects.all().delete()  # as if the round-2 page had never been opened
    bea = make_user("bea")  # assigned elsewhere in the project: she needs a letter in the export too
    other = Batch.objects.create(project=scene["project"], name="batch-2")
    Assignment.objects.create(batch=other, annotator=bea)
    out = tmp_path / "all.csv"
    call_command("export", "--project", "demo", "--format", "csv", "--out", str(out), "--pseudonyms")
    assert dict(Pseudonym.objects.values_list("user__username", "label")) == {
        "amy": "Annotator A", "bea": "Annotator B", "zoe": "Annotator C",
    }
    seen_by_amy = login(scene["amy"]).get(f"/api/samples/{scene['sample'].pk}/others/").json()
    assert [span["annotator"] for span in seen_by_amy["spans"]] == ["Annotator C"]
    assert {row["annotator"] for row in csv.DictReader(out.open())} == {"Annotator A", "Annotator C"}


def test_names_are_shown_when_the_batch_reveals_them() -> None:
    scene = round_two_batch()
    Batch.objects.filter(project=scene["project"]).update(reveal_names=True)
    seen_by_zoe = login(scene["zoe"]).get(f"/api/samples/{scene['sample'].pk}/others/").json()
    assert [span["annotator"] for span in seen_by_zoe["spans"]] == ["amy"]
