"""The API's JSON parser: a body holding a NUL or a lone surrogate anywhere is a 400 naming the field.

DRF's CharFields refuse both in a value, but not in an object key, and their
refusals quote the input: a body ``{"k\\ud800": 1}`` got "Unknown field
'k\\ud800'", which the JSON renderer cannot encode as UTF-8, so a 500; a
choice field's "... is not a valid choice" did the same. Checking the parsed
body once, before any serializer reads it, covers every JSON endpoint (those of
tomorrow too) with the one rule the importers apply (annotate.storable), in the
API's field -> [messages] shape; nothing is changed.

The file imports (a project's data, judge outputs) read their files the same way, from here: a multipart body
only (FILE_PARSERS), its ``file`` parts read within the size limit (read_file_field).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import BaseParser, DataAndFiles, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.settings import api_settings

from annotate.storable import find_unstorable, find_unstorable_field
from annotate.uploads import UploadTooLarge, read_uploads, stopped_upload


def unstorable_errors(body: Any) -> dict[str, list[str]] | None:
    """The 400's errors for a parsed JSON body holding NUL or a lone surrogate, or None when it holds neither.

    An object's field is named as the middleware names a form field (config.nul_guard); a body that is not an
    object (a list, a string) is not any field's, so its refusal is a ``non_field_errors`` naming where.
    """
    if isinstance(body, Mapping):
        located = find_unstorable_field((str(name), value) for name, value in body.items())
        if located is None:
            return None
        field, found = located
        return {field: [found.problem if found.path == field else f"{found.path}: {found.problem}"]}
    found = find_unstorable(body, "body")
    return None if found is None else {api_settings.NON_FIELD_ERRORS_KEY: [f"{found.path}: {found.problem}"]}


class StorableJSONParser(JSONParser):
    """DRF's JSONParser, refusing a body the database could not store or give back (see the module's docstring)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        body = super().parse(stream, media_type, parser_context)
        if (errors := unstorable_errors(body)) is not None:
            raise ValidationError(errors)
        return body


class NoFileParser(BaseParser):
    """Any body that is not multipart/form-data, for the file imports (judge outputs, a project's data): it cannot
    carry a file, so it reads as empty and the import answers 400 naming the missing field `file` (not 415, which
    would not say what to send)."""

    media_type = "*/*"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> DataAndFiles:
        return DataAndFiles(QueryDict(), MultiValueDict())


# A file import view's parser_classes. Its schema names multipart/form-data only (its extend_schema): the one way
# to send a file; any other body reads as empty (NoFileParser), so the answer is a 400 naming `file`.
FILE_PARSERS = (MultiPartParser, NoFileParser)


def refuse_stopped_upload(request: Request) -> None:
    """A 400 under ``file`` when the upload was stopped for its size (annotate.uploads), before the other fields are
    checked: past the size that is read to its end (annotate.uploads.DRAIN_FLOOR_BYTES) those sent after the files
    are never read, and "format: This field is required." would be wrong."""
    request.data  # noqa: B018  (parses the body, or takes Django's parse when a CSRF check read it first)
    stopped = stopped_upload(request._request)
    if stopped is not None:
        raise ValidationError({"file": stopped.messages})


def read_file_field(request: Request, default_name: str = "upload") -> list[tuple[str, bytes]]:
    """The body's ``file`` parts, each as (name, content); ``default_name`` names a part sent without a file name.

    An upload over the size limit (annotate.uploads) is refused before any file is read, so a 200 MB upload never
    reaches memory: a 400 with its messages under ``file``, the field that carried it.
    """
    try:
        # DRF parses the body on reading FILES, through the Django request's upload handlers (annotate.uploads).
        return read_uploads(request.FILES.getlist("file"), default_name=default_name, request=request._request)
    except UploadTooLarge as refused:
        # Not annotate.api.errors.field_error: that module imports DRF's views, which read this module (settings).
        raise ValidationError({"file": refused.messages}) from None
