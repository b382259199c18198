"""The FaithBench batch files as one zip, streamed: handed on as zipfile writes it, a batch file at a time."""

from __future__ import annotations

import time
import zipfile
from collections.abc import Iterator
from typing import Any

from annotate.file_names import file_name_problem
from annotate.models import Project
from annotate.services.export.faithbench import faithbench_files
from annotate.services.export.options import ExportError, ExportOptions, export_stem

# A streamed zip is handed on once this many compressed bytes are waiting, and at the end of each batch file.
ZIP_CHUNK = 1 << 16


class _ZipSink:
    """A write-only, unseekable file for zipfile: it keeps what was written until drained. Without ``tell`` or
    ``seek``, zipfile writes each entry's sizes after its data (data descriptors), so nothing is rewritten."""

    def __init__(self) -> None:
        self.pending = bytearray()

    def write(self, data: bytes) -> int:
        self.pending += data
        return len(data)

    def flush(self) -> None:
        """Nothing to flush: the bytes wait for drain()."""

    def drain(self) -> bytes:
        data = bytes(self.pending)
        self.pending.clear()
        return data


def _zip_entry(name: str, mode: int) -> zipfile.ZipInfo:
    """An entry dated now, with the permissions an unzipped file or folder gets (as shutil.make_archive gives)."""
    entry = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    entry.external_attr = mode << 16
    if name.endswith("/"):  # empty, as ZipFile.mkdir leaves a folder it names itself
        entry.external_attr |= 0x10  # MS-DOS directory flag
        entry.CRC = entry.compress_size = entry.file_size = 0
    else:
        entry.compress_type = zipfile.ZIP_DEFLATED
    return entry


def faithbench_zip_chunks(project: Project, options: ExportOptions, progress: Any = None) -> Iterator[bytes]:
    """The FaithBench batch files zipped under ``<slug>-round<N>/`` (``-pseudonyms`` added with pseudonyms:
    options.export_stem), given out as the zip is written: one batch
    file is built at a time, so a large project's download starts at once and memory stays at one sample plus a
    chunk. The options are checked now, so a bad round is refused before a streamed response has begun."""
    files = faithbench_files(project, options, progress)
    return _faithbench_zip_chunks(export_stem(project, options), files)


def _faithbench_zip_chunks(stem: str, files: Iterator[tuple[str, Iterator[bytes]]]) -> Iterator[bytes]:
    """The zip of faithbench_files' files; what zipfile has written is handed on a chunk at a time."""
    sink = _ZipSink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.mkdir(_zip_entry(f"{stem}/", 0o40755))
        for name, pieces in files:
            if file_name_problem(name, suffix="") is not None:  # export_file_names makes this impossible
                raise ExportError(f"batch file {name!r} is no safe name for a zip entry; the zip is not complete")
            with archive.open(_zip_entry(f"{stem}/{name}", 0o100644), "w") as entry:
                for piece in pieces:
                    entry.write(piece)
                    if len(sink.pending) >= ZIP_CHUNK:
                        yield sink.drain()
            yield sink.drain()
    yield sink.drain()  # the central directory, written on close
