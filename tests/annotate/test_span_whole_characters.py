"""A span starts and ends between whole characters (grapheme clusters): half of a ZWJ emoji family, one regional
indicator of a flag, or a letter without its combining accent is refused on create and on a change of offsets or
source link, with a 400 naming the offset and that it splits a character; nothing is stored. A browser's selection
never makes one (the page moves by clusters). The span next to the cluster, on whole characters, is accepted. A
FaithBench file's spans are the file's: an import keeps a split span as it is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from annotate.models import Sample, SpanAnnotation
from annotate.services.spans import SpanError, create_span
from tests.annotate.test_ingest import example
from tests.conftest import login

FAMILY = "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466"  # 7 code points, one character
FLAG = "\U0001F1EB\U0001F1F7"
SUMMARY = f"The family {FAMILY} moved from Paris {FLAG} to a cafe\u0301 by the sea."


def post_span(client: Any, body: dict[str, Any]) -> Any:
    return client.post("/api/spans/", json.dumps(body), content_type="application/json")


@pytest.fixture
def emoji_sample(sample: Sample) -> Sample:
    Sample.objects.filter(pk=sample.pk).update(summary=SUMMARY)
    sample.passage.text = SUMMARY
    sample.passage.save(update_fields=["text"])
    sample.refresh_from_db()
    return sample


def test_first_split_finds_offsets_inside_clusters_only() -> None:
    from annotate.graphemes import first_split

    family = SUMMARY.index(FAMILY)
    assert first_split(SUMMARY, (family, family + len(FAMILY))) is None
    assert first_split(SUMMARY, (family + 2, family + len(FAMILY))) == (family + 2, family, family + 7)
    accent = SUMMARY.index("\u0301")
    assert first_split(SUMMARY, (accent,)) == (accent, accent - 1, accent + 1)
    # Four regional indicators are two flags: the boundary between them is whole, the ones inside are not.
    assert first_split(FLAG * 2, (2,)) is None
    assert first_split(FLAG * 2, (1, 3)) == (1, 0, 2)
    assert first_split(SUMMARY, (0, len(SUMMARY))) is None


@pytest.mark.django_db
def test_a_span_ending_inside_the_emoji_family_is_refused_and_the_whole_family_is_kept(
    emoji_sample: Sample, alice: Any
) -> None:
    family = SUMMARY.index(FAMILY)
    client = login(alice)
    inside = family + 3
    answer = post_span(client, {"sample": emoji_sample.pk, "start": family, "end": inside, "labels": ["Benign"]})
    assert answer.status_code == 400
    message = answer.json()["end"][0]
    assert f"end {inside} splits a character" in message and f"{family}..{family + 7}" in message
    assert not SpanAnnotation.objects.exists()
    whole = post_span(client, {"sample": emoji_sample.pk, "start": family, "end": family + 7, "labels": ["Benign"]})
    assert whole.status_code == 201 and whole.json()["text"] == FAMILY


@pytest.mark.django_db
def test_a_span_starting_inside_a_flag_or_between_a_letter_and_its_accent_is_refused(
    emoji_sample: Sample, alice: Any
) -> None:
    client = login(alice)
    flag = SUMMARY.index(FLAG)
    answer = post_span(client, {"sample": emoji_sample.pk, "start": flag + 1, "end": flag + 6, "labels": ["Benign"]})
    assert answer.status_code == 400 and f"start {flag + 1} splits a character" in answer.json()["start"][0]
    accent = SUMMARY.index("\u0301")
    answer = post_span(client, {"sample": emoji_sample.pk, "start": accent - 4, "end": accent, "labels": ["Benign"]})
    assert answer.status_code == 400 and f"end {accent} splits a character" in answer.json()["end"][0]
    assert not SpanAnnotation.objects.exists()
    paris = SUMMARY.index("Paris")
    kept = post_span(client, {"sample": emoji_sample.pk, "start": paris, "end": flag + 2, "labels": ["Benign"]})
    assert kept.status_code == 201 and kept.json()["text"] == f"Paris {FLAG}"
    cafe = post_span(client, {"sample": emoji_sample.pk, "start": accent - 4, "end": accent + 1, "labels": ["Benign"]})
    assert cafe.status_code == 201 and cafe.json()["text"] == "cafe\u0301"


@pytest.mark.django_db
def test_moving_a_span_or_its_source_link_into_a_character_changes_nothing(emoji_sample: Sample, alice: Any) -> None:
    client = login(alice)
    created = post_span(client, {"sample": emoji_sample.pk, "start": 0, "end": 3, "labels": ["Benign"]}).json()
    family = SUMMARY.index(FAMILY)
    moved = client.patch(f"/api/spans/{created['id']}/", json.dumps({"version": created["version"], "start": family,
                                                                    "end": family + 1}), content_type="application/json")
    assert moved.status_code == 400 and f"end {family + 1} splits a character" in moved.json()["end"][0]
    linked = client.patch(f"/api/spans/{created['id']}/", json.dumps({
        "version": created["version"], "source_start": family + 5, "source_end": family + 7,
    }), content_type="application/json")
    assert linked.status_code == 400
    assert f"source_start {family + 5} splits a character" in linked.json()["source_start"][0]
    stored = SpanAnnotation.objects.get()
    assert (stored.start, stored.end, stored.source_start, stored.version) == (0, 3, None, created["version"])


@pytest.mark.django_db
def test_the_service_every_writer_uses_refuses_it_too(emoji_sample: Sample, alice: Any) -> None:
    family = SUMMARY.index(FAMILY)
    with pytest.raises(SpanError) as refused:
        create_span(emoji_sample, alice, round=1, start=family + 2, end=family + 7, labels=["Benign"])
    assert refused.value.field == "start" and "splits a character" in refused.value.message
    assert not SpanAnnotation.objects.exists()


@pytest.mark.django_db
def test_an_imported_span_inside_a_character_is_kept_as_the_file_has_it(tmp_path: Path) -> None:
    document = example()
    sample = document["samples"][0]
    sample["summary"] = SUMMARY
    family = SUMMARY.index(FAMILY)
    half = {**sample["annotations"][0], "annot_id": 99, "summary_span": SUMMARY[family:family + 3],
            "summary_start": family, "summary_end": family + 3, "source_span": None, "source_start": None,
            "source_end": None}
    sample["annotations"] = [half]
    source = tmp_path / "batch_1.json"
    source.write_text(json.dumps(document))
    call_command("import_faithbench", str(source), "--project", "fb")
    stored = SpanAnnotation.objects.get(external_id="99")
    assert (stored.start, stored.end, stored.text) == (family, family + 3, SUMMARY[family:family + 3])


@pytest.mark.django_db
def test_offsets_a_stored_span_already_has_are_taken_as_they_are_round_two_copy_of_an_imported_span(
    emoji_sample: Sample, alice: Any, bob: Any
) -> None:
    """An imported span may split a character (the file's data); round 2's Copy sends its offsets unchanged, and a
    change that keeps them is no new split: both are stored, while other split offsets are still refused."""
    family = SUMMARY.index(FAMILY)
    inside = family + 3
    SpanAnnotation.objects.create(sample=emoji_sample, annotator=bob, round=1, start=family, end=inside,
                                  text=SUMMARY[family:inside], labels=["Benign"])  # as an import stores it
    copied = create_span(emoji_sample, alice, round=1, start=family, end=inside, labels=["Benign"])
    assert (copied.start, copied.end) == (family, inside)
    with pytest.raises(SpanError):
        create_span(emoji_sample, alice, round=1, start=family, end=inside + 1, labels=["Benign"])
