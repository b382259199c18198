"""The size limit on imported files (settings.MAX_UPLOAD_MB), checked before any file is read.

Reading an import's files whole and importing them costs about 6 times their
size in memory (a 200 MB upload took a web process to ~1.47 GB), so the limit
holds for the files of one import together. It is checked as early as the
request allows, by :class:`UploadLimitHandler`, the first upload handler
(settings.FILE_UPLOAD_HANDLERS): a body that declares more than the limit (and
room for the form's other fields) is stopped at its first file, before any of
its files is received; any other stops as soon as the file bytes received pass
the limit, and the file being received is dropped with its temporary file.
The rest of a stopped body is read a chunk at a time and thrown away (every
file skipped, the fields after them kept) when it is at most DRAIN_FACTOR
times the limit or DRAIN_FLOOR_BYTES, whichever is more: a server that stops
reading (gunicorn drains 64 KB) closes the connection while the browser is
still sending, and the browser then shows "connection reset" instead of the
refusal. A larger body is not read further; its sender may see that reset
(and Django's development server reads that rest in one piece when it closes
the request).
Django parses the body when something first reads request.POST or FILES (the
CSRF check does, for a page), and the fields sent before the files (the CSRF
token) are kept. Every import, page or API, reads its files through
:func:`read_uploads`, which raises the stopped upload's refusal, and refuses
files over the limit by their size alone, before reading any of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.core.files.uploadhandler import FileUploadHandler, SkipFile, StopUpload
from django.http import HttpRequest

SETTING = "FAITHLAB_MAX_UPLOAD_MB"
# Room in a body, beyond the limit on its files, for the form's other fields and the multipart framing: a file of
# exactly the limit is taken whole.
FORM_ALLOWANCE = 64 * 1024
# Where UploadLimitHandler leaves its refusal on the request, for read_uploads.
STOPPED = "faithlab_upload_stopped"
ADVICE = f"split it into smaller files and import them in turn, or raise the limit with the setting {SETTING}."
# A stopped body up to this many times the limit, or up to DRAIN_FLOOR_BYTES, is read to its end (and thrown away),
# so the browser gets the refusal page; a larger one is left unread (see the module docstring).
DRAIN_FACTOR = 4
DRAIN_FLOOR_BYTES = 1024**3


class UploadTooLarge(ValueError):
    """An upload over the limit, or files over it, one message each (the size, the limit and the setting; the file
    when it is known); nothing was read."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = messages
        super().__init__("\n".join(messages))

    def page_messages(self) -> list[str]:
        """The refusal as a page shows it, one message per file, the first saying that nothing was imported."""
        if len(self.messages) == 1:
            return [f"Nothing was imported. {self.messages[0]}"]
        return [f"Nothing was imported: {len(self.messages)} files are too large.", *self.messages]


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _limit_bytes() -> int:
    return int(settings.MAX_UPLOAD_MB) * 1024 * 1024


class UploadLimitHandler(FileUploadHandler):
    """Stops an upload over the limit before its files reach memory or disk (see the module); the handlers after it
    keep the files of an upload within it."""

    def __init__(self, request: HttpRequest | None = None) -> None:
        super().__init__(request)
        self.declared_over: int | None = None  # the body's declared length, when over the limit
        self.declared = 0  # the body's declared length
        self.received = 0  # file bytes received so far, all files together
        self.stopped = False  # refused: every file from here on is skipped

    def handle_raw_input(self, input_data: Any, META: dict[str, Any], content_length: int, boundary: bytes,  # noqa: N803
                         encoding: str | None = None) -> None:
        self.declared = content_length
        if content_length > _limit_bytes() + FORM_ALLOWANCE:
            self.declared_over = content_length
        # Parsing goes on up to the first file, so that the fields before it (the CSRF token) are read.

    def new_file(self, field_name: str, file_name: str, *args: Any, **kwargs: Any) -> None:
        super().new_file(field_name, file_name, *args, **kwargs)
        if self.stopped:
            raise SkipFile
        if self.declared_over is not None:
            self._stop(f"The upload is {_megabytes(self.declared_over)}, over the {settings.MAX_UPLOAD_MB} MB limit "
                       f"on imported files (the files of one import together); {ADVICE}")

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > _limit_bytes():
            self._stop(f"{self.file_name}: with this file the upload ({_megabytes(self.declared)}) is over the "
                       f"{settings.MAX_UPLOAD_MB} MB limit on imported files (the files of one import together); "
                       f"{ADVICE}")
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler makes the file

    def _stop(self, message: str) -> None:
        """Leaves the refusal for read_uploads and drops the file being received (Django closes, and so deletes,
        what the next handlers made of it). The rest of the body is read in chunks and thrown away (SkipFile: this
        file's rest, then every later file), the fields after the files kept, unless the body is larger than both
        DRAIN_FACTOR times the limit and DRAIN_FLOOR_BYTES: then the parse ends and the rest is left unread."""
        if not self.stopped:
            setattr(self.request, STOPPED, UploadTooLarge([message]))
            self.stopped = True
        if self.declared > max(DRAIN_FACTOR * _limit_bytes(), DRAIN_FLOOR_BYTES):
            raise StopUpload(connection_reset=True)
        raise SkipFile


def too_large(uploads: Sequence[UploadedFile], default_name: str = "upload") -> list[str]:
    """A message for each file larger than MAX_UPLOAD_MB: its name, its size, the limit and the setting."""
    limit = settings.MAX_UPLOAD_MB
    return [
        f"{upload.name or default_name}: the file is {_megabytes(upload.size or 0)}, over the {limit} MB limit on "
        f"imported files; split it into smaller files, or raise the limit with the setting {SETTING}."
        for upload in uploads
        if (upload.size or 0) > limit * 1024 * 1024
    ]


def stopped_upload(request: HttpRequest) -> UploadTooLarge | None:
    """The refusal of ``request``'s upload when UploadLimitHandler stopped it (its body parsed already)."""
    return getattr(request, STOPPED, None)


def read_uploads(
    uploads: Sequence[UploadedFile], default_name: str = "upload", *, request: HttpRequest | None = None
) -> list[tuple[str, bytes]]:
    """Each file's name and content; UploadTooLarge, before reading any, when ``request`` (the one that carried
    them, parsed already) was stopped by UploadLimitHandler or when one is over the limit."""
    stopped = None if request is None else stopped_upload(request)
    if stopped is not None:
        raise stopped
    refused = too_large(uploads, default_name)
    if refused:
        raise UploadTooLarge(refused)
    return [(upload.name or default_name, upload.read()) for upload in uploads]
