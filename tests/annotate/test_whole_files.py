"""Export files are whole or absent (annotate.services.export.whole_files): the previous file stays as it was when
a write fails, and a new one gets the mode a plain open gives (0666 less the umask), not a temporary file's 0600, so
a team's shared export folder stays readable to the others. The judgements and audits export writes this way too."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from annotate.services.export.whole_files import whole_file
from judging.services import export as judging_export


def umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_a_finished_file_has_the_mode_of_a_plain_open_and_no_temporary_is_left(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    plain.write_text("x\n")
    path = tmp_path / "export.jsonl"
    with whole_file(path, "w", encoding="utf-8") as handle:
        handle.write("line\n")
    assert path.read_text() == "line\n"
    assert stat.S_IMODE(path.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode) == 0o666 & ~umask()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.jsonl", "plain.jsonl"]


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "export.csv"
    path.write_text("last week\n")
    with pytest.raises(OSError), whole_file(path, "w") as handle:
        handle.write("half\n")
        raise OSError(28, "No space left on device")
    assert path.read_text() == "last week\n"
    assert [p.name for p in tmp_path.iterdir()] == ["export.csv"]


@pytest.mark.django_db
def test_the_judgements_export_keeps_the_previous_file_when_it_fails(tmp_path: Path, monkeypatch: Any,
                                                                     project: Any) -> None:
    out = tmp_path / "judgements.csv"
    out.write_text("last week\n")

    def failing(*args: Any, **kwargs: Any) -> Any:
        yield "sample_id,score\r\n"
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(judging_export, "export_lines", failing)
    with pytest.raises(OSError):
        judging_export.write_export(project, out, what="judgements", format="csv")
    assert out.read_text() == "last week\n"
    assert [p.name for p in tmp_path.iterdir()] == ["judgements.csv"]
