"""The size limit on imported files (settings.MAX_UPLOAD_MB), checked before any file is read.

Django keeps a large upload in a temporary file, so receiving it costs no
memory; reading it whole and importing it does, about 6 times the file's size
(a 200 MB upload took a web process to ~1.47 GB). Every import, page or API,
reads its files through :func:`read_uploads`, which refuses files over the
limit by their size alone, before reading any of them.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

SETTING = "FAITHLAB_MAX_UPLOAD_MB"


class UploadTooLarge(ValueError):
    """Files over the limit, one message each (the file, its size, the limit and the setting); nothing was read."""

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


def too_large(uploads: Sequence[UploadedFile], default_name: str = "upload") -> list[str]:
    """A message for each file larger than MAX_UPLOAD_MB: its name, its size, the limit and the setting."""
    limit = settings.MAX_UPLOAD_MB
    return [
        f"{upload.name or default_name}: the file is {_megabytes(upload.size or 0)}, over the {limit} MB limit on "
        f"imported files; split it into smaller files, or raise the limit with the setting {SETTING}."
        for upload in uploads
        if (upload.size or 0) > limit * 1024 * 1024
    ]


def read_uploads(uploads: Sequence[UploadedFile], default_name: str = "upload") -> list[tuple[str, bytes]]:
    """Each file's name and content; UploadTooLarge, before reading any, when one is over the limit."""
    refused = too_large(uploads, default_name)
    if refused:
        raise UploadTooLarge(refused)
    return [(upload.name or default_name, upload.read()) for upload in uploads]
