"""The API's JSON parser: a body holding a NUL or a lone surrogate anywhere is a 400 naming the field.

DRF's CharFields refuse both in a value, but not in an object key, and their
refusals quote the input: a body ``{"k\\ud800": 1}`` got "Unknown field
'k\\ud800'", which the JSON renderer cannot encode as UTF-8, so a 500; a
choice field's "... is not a valid choice" did the same. Checking the parsed
body once, before any serializer reads it, covers every JSON endpoint (those of
tomorrow too) with the one rule the importers apply (annotate.storable), in the
API's field -> [messages] shape; nothing is changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import QueryDict
from django.utils.datastructures import MultiValueDict
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import BaseParser, DataAndFiles, JSONParser
from rest_framework.settings import api_settings

from annotate.storable import find_unstorable, find_unstorable_field


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
