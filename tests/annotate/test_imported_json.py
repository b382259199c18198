"""The reader every import shares (annotate.imported_json), on its own: what it keeps, what it marks, in which order
it names what it refuses (the importers' own tests: tests/annotate/test_import_json_values.py and its pair and
judging fellows)."""

from __future__ import annotations

import pytest

from annotate import imported_json

NOT_JSON = "which JSON does not allow and no database stores; write a number or null"


def test_the_shared_reader_walks_in_file_order_and_keeps_what_is_sound() -> None:
    sound = imported_json.loads('{"a": 1.5, "b": [1e308, -0.0, {"c": null}], "d": "text"}')
    assert sound == {"a": 1.5, "b": [1e308, -0.0, {"c": None}], "d": "text"}
    assert imported_json.find_refused(sound) is None
    found = imported_json.find_refused(imported_json.loads('{"a": [1, NaN], "b": {"c": 1, "c": 2}}'))
    assert found is not None and found.describe() == f"field 'a[1]' is NaN, {NOT_JSON}"
    skipped = imported_json.loads('{"samples": [NaN], "roster": 1e400}')
    assert imported_json.find_refused(skipped, skip="samples").path == "roster"


@pytest.mark.parametrize(("content", "reason"), [
    ('{"a": 1}'.encode("utf-16"), "this is UTF-16 text"),
    ('{"a": 1}'.encode("utf-16-be"), "this is UTF-16 text"),
    ('{"a": 1}'.encode("utf-32"), "this is UTF-32 text"),
    ('{"a": 1}'.encode("utf-32-le"), "this is UTF-32 text"),
    (b"PK\x05\x06" + bytes(18), "this is a zip archive"),
    (b"\x1f\x8b\x08\x00", "this is a gzip-compressed file"),
])
def test_wide_encodings_and_archives_are_told_from_the_first_bytes(content: bytes, reason: str) -> None:
    with pytest.raises(imported_json.Unreadable) as refused:
        imported_json.decoded(content, "UTF-8 JSONL")
    assert str(refused.value).startswith(reason)


def test_utf8_with_or_without_a_byte_order_mark_is_read() -> None:
    assert imported_json.decoded("\ufeff{}".encode()) == "{}"
    assert imported_json.decoded("{\"a\": \"é\"}".encode()) == '{"a": "é"}'
    assert imported_json.not_text(b"{}") is None
