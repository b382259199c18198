"""`manage.py check_text`: an install from before the NUL and lone-surrogate checks (annotate/storable.py) may hold
such text, and then every reader of the row fails. The command names each such string (model, primary key, field,
JSON path, the character escaped) and exits 1; with --fix it replaces each with U+FFFD, after which the readers work.

The bad rows are written with raw SQL, as an old install on SQLite had them: a JSON column holding the ASCII escape
``\\ud800`` (what json.dumps wrote), or a column holding the surrogate's three raw bytes, which the ORM cannot even
load. PostgreSQL cannot hold either, so those tests are SQLite's.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DataError, connection, models, transaction
from django.test import Client

from annotate.models import FigureSet, Membership, PairConfig, PairItem, Project, Sample
from annotate.services.stored_text import text_columns
from annotate.storable import find_unstorable, repair_unstorable
from judging.models import Judgement
from tests.conftest import login, needs_postgres
from tests.judging.audit_helpers import judge_sample, make_judge, make_run
from tests.pairs.conftest import make_pair_items

needs_sqlite = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="PostgreSQL cannot store NUL or a lone surrogate, so there is none to find"
)


def store(model: type[models.Model], pk: int, column: str, value: Any, *, as_bytes: bool = False) -> None:
    """Write ``value`` into one column with raw SQL, bypassing every check: a dict or list as json.dumps writes it
    (ASCII escapes), or with ``as_bytes`` a string's UTF-8 bytes with any lone surrogate as its three bytes."""
    text = json.dumps(value) if isinstance(value, dict | list) else value
    table, quoted = connection.ops.quote_name(model._meta.db_table), connection.ops.quote_name(column)
    expression, parameter = ("CAST(%s AS TEXT)", text.encode("utf-8", "surrogatepass")) if as_bytes else ("%s", text)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET {quoted} = {expression} WHERE id = %s", [parameter, pk])  # noqa: S608


def check_text(*arguments: str) -> tuple[int, str]:
    """The command's exit status and what it printed."""
    out = io.StringIO()
    try:
        call_command("check_text", *arguments, stdout=out)
    except CommandError as error:
        return error.returncode, out.getvalue() + str(error)
    return 0, out.getvalue()


@dataclass
class OldInstall:
    samples: list[Sample]
    judgement: Judgement
    pair_item: PairItem


@pytest.fixture
def old_install(batch: Any, admin_user: Any) -> OldInstall:
    """A span project, a judgement and a pairs project, with bad text written the ways an old install had it."""
    samples = list(batch.samples.order_by("position"))
    run = make_run(make_judge(batch.project, "gpt-explainer"))
    judgement = judge_sample(run, samples[2], score=2, reasoning="fine")
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=pairs)
    Membership.objects.create(project=pairs, user=admin_user, role=Membership.Role.ADMIN)
    pair_item = make_pair_items(pairs, 1)[0]

    store(Sample, samples[0].pk, "metadata", {"summarizer": "m", "hhemv1": 0.4, "note": "cut \ud83d"})
    store(Sample, samples[1].pk, "metadata", {"summarizer": "m", "k\ud800": 1}, as_bytes=True)
    store(Judgement, judgement.pk, "raw", '{"score": 2, "reasoning": "an emoji cut \udfff"}', as_bytes=True)
    store(Judgement, judgement.pk, "reasoning", "a NUL \x00 here")
    store(PairItem, pair_item.pk, "metadata", {"tags": ["ok", "x\udc00"]})
    return OldInstall(samples, judgement, pair_item)


READER_FAILURE = "surrogates not allowed|Could not decode to UTF-8"


def span_export(client: Client, export_format: str) -> bytes:
    answer = client.get(f"/api/projects/demo/export/?format={export_format}")
    assert answer.status_code == 200
    return b"".join(answer.streaming_content)


def assert_readers_fail(client: Client, install: OldInstall) -> None:
    """What the bad rows did to the readers (the reason for the command)."""
    client.raise_request_exception = True
    for export_format in ("jsonl", "faithbench"):
        with pytest.raises(Exception, match=READER_FAILURE):  # the UTF-8 encoder, or the driver for raw bytes
            span_export(client, export_format)
    with pytest.raises(Exception, match=READER_FAILURE):
        b"".join(client.get("/api/projects/pairs/export/?format=pairs").streaming_content)
    client.raise_request_exception = False
    for sample in install.samples[:2]:
        assert client.get(f"/api/samples/{sample.pk}/").status_code == 500


# --------------------------------------------------------------------------- the check


@needs_sqlite
@pytest.mark.django_db
def test_the_check_names_model_key_field_path_and_character_of_each_bad_string_and_exits_1(
    old_install: OldInstall,
) -> None:
    first, second = old_install.samples[:2]
    status, printed = check_text()
    assert status == 1
    *found, summary, refusal = printed.splitlines()
    assert sorted(found) == sorted([
        f"annotate.Sample pk={first.pk} field metadata, at 'note': a lone surrogate (\\ud83d)",
        f"annotate.Sample pk={second.pk} field metadata, key 'k\\ud800': a lone surrogate (\\ud800)",
        f"annotate.PairItem pk={old_install.pair_item.pk} field metadata, at 'tags[1]': a lone surrogate (\\udc00)",
        f"judging.Judgement pk={old_install.judgement.pk} field reasoning: a NUL character (\\u0000)",
        f"judging.Judgement pk={old_install.judgement.pk} field raw: a lone surrogate (\\udfff)",
    ])
    assert summary.startswith("Found 5 string(s) in 4 row(s) holding NUL or a lone surrogate (")
    assert "run `manage.py check_text --fix`" in refusal
    assert Sample.objects.filter(pk=first.pk).values_list("metadata", flat=True).get()["note"] == "cut \ud83d"


@pytest.mark.django_db
def test_a_clean_database_exits_0_and_a_character_outside_the_bmp_is_not_a_surrogate(batch: Any) -> None:
    sample = batch.samples.get(generator="model-c")  # its summary holds 🌉
    Sample.objects.filter(pk=sample.pk).update(metadata={"k🌉": "see 🌉"})
    status, printed = check_text()
    assert status == 0
    assert printed.startswith("No NUL or lone surrogate found (")
    assert status == check_text("--fix")[0] == 0
    assert Sample.objects.get(pk=sample.pk).metadata == {"k🌉": "see 🌉"}


def test_the_columns_come_from_the_models_of_both_apps_json_and_text_alike() -> None:
    columns = {f"{model._meta.label}.{column.name}" for model, fields in text_columns() for column in fields}
    assert {"annotate.Sample.metadata", "annotate.Sample.summary", "annotate.PairItem.metadata",
            "annotate.SpanAnnotation.labels", "annotate.FigureSet.value", "judging.Judgement.raw",
            "judging.Judgement.sentence_scores", "judging.SyntheticItem.replaced"} <= columns
    assert not any(name.startswith("auth.") or name.endswith((".id", ".created_at")) for name in columns)


# --------------------------------------------------------------------------- the repair


@needs_sqlite
@pytest.mark.django_db
def test_fix_replaces_each_with_u_fffd_after_which_exports_and_the_sample_api_work(
    old_install: OldInstall, admin_user: Any
) -> None:
    client = login(admin_user)
    assert_readers_fail(client, old_install)

    status, printed = check_text("--fix")
    assert status == 0, printed
    assert sum(line.startswith("fixed ") for line in printed.splitlines()) == 5
    assert f"fixed annotate.Sample pk={old_install.samples[1].pk} field metadata, key 'k\\ud800': " in printed
    assert "Replaced 5 string(s) in 4 row(s) with U+FFFD; 0 row(s) left unchanged" in printed

    first, second = (Sample.objects.get(pk=sample.pk) for sample in old_install.samples[:2])
    assert first.metadata == {"summarizer": "m", "hhemv1": 0.4, "note": "cut \ufffd"}
    assert second.metadata == {"summarizer": "m", "k\ufffd": 1}
    judgement = Judgement.objects.get(pk=old_install.judgement.pk)
    assert judgement.raw == '{"score": 2, "reasoning": "an emoji cut \ufffd"}'
    assert (judgement.reasoning, judgement.score) == ("a NUL \ufffd here", 2)  # one code point for one
    assert PairItem.objects.get(pk=old_install.pair_item.pk).metadata == {"tags": ["ok", "x\ufffd"]}

    lines = span_export(client, "jsonl").decode().splitlines()
    assert len(lines) == 3 and json.loads(lines[1])["metadata"]["k\ufffd"] == 1
    archive = zipfile.ZipFile(io.BytesIO(span_export(client, "faithbench")))
    written = json.loads(archive.read("demo-round1/batch-1.json"))
    assert archive.testzip() is None and written["samples"][1]["metadata"]["k\ufffd"] == 1
    for sample in (first, second):
        answer = client.get(f"/api/samples/{sample.pk}/")
        assert answer.status_code == 200 and answer.json()["metadata"] == sample.metadata
    pairs = b"".join(client.get("/api/projects/pairs/export/?format=pairs").streaming_content).decode()
    assert json.loads(pairs.splitlines()[0])["metadata"] == {"tags": ["ok", "x\ufffd"]}
    assert client.get("/projects/demo/results/").status_code == 200


@needs_sqlite
@pytest.mark.django_db
def test_a_second_fix_changes_nothing(old_install: OldInstall) -> None:
    assert check_text("--fix")[0] == 0
    rows = [list(model._base_manager.order_by("pk").values_list()) for model, _ in text_columns()]
    status, printed = check_text("--fix")
    assert status == 0
    assert "fixed" not in printed and "Replaced 0 string(s) in 0 row(s)" in printed
    assert [list(model._base_manager.order_by("pk").values_list()) for model, _ in text_columns()] == rows
    status, printed = check_text()
    assert status == 0 and printed.startswith("No NUL or lone surrogate found")


@needs_sqlite
@pytest.mark.django_db
def test_a_key_whose_repair_takes_another_keys_name_is_reported_and_its_row_left_unchanged(
    old_install: OldInstall,
) -> None:
    sample = old_install.samples[2]
    bad = dict([("k\ud800", 1), ("k\ufffd", 2), ("note", "x\x00")])  # not a literal: ruff takes \ud800 for \ufffd (F601)
    store(Sample, sample.pk, "metadata", bad)
    status, printed = check_text()
    assert status == 1
    assert (f"cannot fix annotate.Sample pk={sample.pk} field metadata, key 'k\\ud800': repaired, its name would be "
            "another key's name in the same object") in printed

    status, printed = check_text("--fix")
    assert status == 1
    assert f"left annotate.Sample pk={sample.pk} field metadata, key 'k\\ud800'" in printed
    assert "Replaced 5 string(s) in 4 row(s) with U+FFFD; 1 row(s) left unchanged" in printed
    assert Sample.objects.get(pk=sample.pk).metadata == bad  # not merged, not half repaired
    assert Sample.objects.get(pk=old_install.samples[0].pk).metadata["note"] == "cut \ufffd"  # the others are


@needs_sqlite
@pytest.mark.django_db
def test_cached_results_figures_holding_a_bad_detector_name_are_repaired_too(batch: Any, admin_user: Any) -> None:
    """The results page keeps its figures as JSON text: the detector named by a bad metadata key is cached there
    as an escape, and an edit of metadata does not make the cache stale, so the page would stay broken."""
    sample = batch.samples.order_by("position").first()
    store(Sample, sample.pk, "metadata", {"summarizer": "m", "det\ud800": 0.2})
    client = login(admin_user)
    client.raise_request_exception = False
    assert client.get("/projects/demo/results/").status_code == 500
    cached = FigureSet.objects.get(project=batch.project, kind="results")
    assert "det\\ud800" in cached.value

    status, printed = check_text("--fix")
    assert status == 0 and (f"fixed annotate.FigureSet pk={cached.pk} field value, at 'selection.detectors[0]': "
                            "a lone surrogate (\\ud800) -> U+FFFD") in printed
    assert f"fixed annotate.Sample pk={sample.pk} field metadata, key 'det\\ud800'" in printed
    assert "det\\ufffd" in FigureSet.objects.get(pk=cached.pk).value
    assert client.get("/projects/demo/results/").status_code == 200


def test_repair_replaces_in_values_and_keys_at_any_depth_and_names_colliding_keys() -> None:
    deep: list[Any] = ["\ud800"]
    for _ in range(3000):  # deeper than Python's recursion limit
        deep = [deep]
    repaired, collisions = repair_unstorable({"a": [{"k\udfff": "x\x00"}, deep], "🌉": "🌉"})
    assert find_unstorable(repaired) is None and collisions == []
    assert repaired["a"][0] == {"k\ufffd": "x\ufffd"} and repaired["🌉"] == "🌉"
    _, collisions = repair_unstorable({"t": dict([("a\ud800", 1), ("a\udc00", 2), ("b\ud800", 3)])})
    assert collisions == ["t.a\\ud800", "t.a\\udc00"]


@needs_postgres
@pytest.mark.django_db
def test_on_postgresql_such_text_cannot_be_stored_and_the_check_runs_clean(batch: Any) -> None:
    sample = batch.samples.order_by("position").first()
    with pytest.raises((DataError, UnicodeEncodeError)), transaction.atomic():  # the server, or the driver
        store(Sample, sample.pk, "metadata", {"k\ud800": 1})
    with pytest.raises((DataError, UnicodeEncodeError)), transaction.atomic():
        store(Sample, sample.pk, "summary", "a NUL \x00 here")
    status, printed = check_text()
    assert status == 0 and printed.startswith("No NUL or lone surrogate found (")
