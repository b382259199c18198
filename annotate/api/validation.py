"""How the API reads input, for every serializer that takes a body or query parameters: a key that is no
writable field is refused by name (never dropped unread), an empty query value is refused with what to send
instead, and a boolean is JSON true or false only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar

from django.http import QueryDict
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField, empty


class RejectsUnknownFields(serializers.Serializer):
    """A body key that is no writable field gets 400 naming it, rather than being dropped unread.

    Dropping it would answer 200 to a change that was never made (and, on a PATCH,
    still bump the version). ``read_only_reasons`` says why a known field cannot be
    written; any other key is unknown. Errors of the other fields come in the same answer.
    """

    read_only_reasons: ClassVar[dict[str, str]] = {}
    # Fields a partial write (PATCH) still needs, with what to send: the schema marks them required too.
    required_when_partial: ClassVar[dict[str, str]] = {}
    # Django's CSRF form field rides along with a session form post; it is no span field.
    IGNORED: ClassVar[frozenset[str]] = frozenset({"csrfmiddlewaretoken"})

    def to_internal_value(self, data: Any) -> Any:
        refused = {**self._missing_keys(data), **self._refused_keys(data)}
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as error:
            if refused and isinstance(error.detail, dict):
                raise serializers.ValidationError({**error.detail, **refused}) from None
            raise
        if refused:
            raise serializers.ValidationError(refused)
        return value

    def accepted_values(self) -> dict[str, Any]:
        """After a failed ``is_valid()``: the fields that passed, valued as ``validated_data`` would hold them.

        DRF keeps no value when any field fails; with these a service checks the rest of the request too, so one
        400 names every field at fault (reversed offsets beside an unknown field, not after it is removed).
        Fields left out take their defaults, as in ``validated_data``.
        """
        values: dict[str, Any] = {}
        if not isinstance(self.initial_data, Mapping):
            return values
        for name, field in self.fields.items():
            if name in self.errors or field.read_only:
                continue
            try:
                values[field.source] = field.run_validation(field.get_value(self.initial_data))
            except (serializers.ValidationError, SkipField):  # SkipField: left out, with no default
                continue
        return values

    def _missing_keys(self, data: Any) -> dict[str, list[str]]:
        if not self.partial or not isinstance(data, Mapping):
            return {}  # a full write: DRF names a missing required field itself
        return {name: [message] for name, message in self.required_when_partial.items() if name not in data}

    def _refused_keys(self, data: Any) -> dict[str, list[str]]:
        if not isinstance(data, Mapping):
            return {}  # DRF answers that one itself, under non_field_errors
        writable = sorted(name for name, field in self.fields.items() if not field.read_only)
        allowed = f"fields you may send: {', '.join(writable)}" if writable else "this endpoint takes no fields"
        refused: dict[str, list[str]] = {}
        for name in sorted(set(data) - set(writable) - self.IGNORED):
            if name in self.read_only_reasons:
                refused[name] = [f"{name} is read-only ({self.read_only_reasons[name]}); nothing was saved"]
            else:
                refused[name] = [f"unknown field {name!r}; nothing was saved ({allowed})"]
        return refused


class NoBodySerializer(RejectsUnknownFields):
    """The body of an action that takes no fields (dismissing a flag): empty, or ``{}``; any key gets 400."""


# The schema of that body: an empty object. Optional, so sending no body at all is described too.
NO_BODY: dict[str, Any] = {
    "application/json": {"type": "object", "additionalProperties": False, "description": "No fields: send {} or no body."}
}


class QueryParamsSerializer(serializers.Serializer):
    """Query parameters read as given: ``?format=`` is an empty value, refused with 400 like any bad one.

    DRF reads a QueryDict as a form, where an empty optional field counts as
    not sent and takes its default: ``?format=`` answered the default format,
    ``?level=`` the nominal alpha, ``?state=`` every item, although the schema
    gives none of them an empty value. Every query serializer of the API
    derives from this one.
    """

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, QueryDict):
            data = {name: data[name] for name in data}  # the last value of each, as request.GET[name] gives
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as error:
            if isinstance(error.detail, dict) and isinstance(data, Mapping):
                raise serializers.ValidationError(self._say_empty(data, error.detail)) from None
            raise

    def _say_empty(self, data: Mapping[str, Any], detail: dict[str, Any]) -> dict[str, Any]:
        """DRF's own words for an empty value (``"" is not a valid choice.``) replaced by what to send instead.

        A field that words its refusals itself (``format``'s "is not a format: choose ...") keeps its message.
        """
        for name, messages in detail.items():
            field = self.fields.get(name)
            if field is None or data.get(name) != "" or not isinstance(messages, list):
                continue
            if all(_in_drfs_words(field, getattr(message, "code", None)) for message in messages):
                detail[name] = [_empty_message(name, field)]
        return detail


def _in_drfs_words(field: serializers.Field, code: str | None) -> bool:
    """Whether the field's message for ``code`` is DRF's default rather than one the field was given."""
    defaults: dict[str, Any] = {}
    for cls in reversed(type(field).__mro__):
        defaults.update(getattr(cls, "default_error_messages", {}))
    return code in defaults and field.error_messages.get(code) is defaults[code]


def _empty_message(name: str, field: serializers.Field) -> str:
    """``level is empty: send one of ..., or leave level out for its default (nominal)``."""
    if isinstance(field, serializers.ChoiceField):
        wanted = "one of " + ", ".join(str(choice) for choice in field.choices)
    elif isinstance(field, serializers.BooleanField):
        wanted = "true or false"
    elif isinstance(field, serializers.IntegerField):
        wanted = "a whole number"
    elif isinstance(field, serializers.FloatField):
        wanted = "a number"
    else:
        wanted = "a value"
    if field.default is not empty:
        default = str(field.default).lower() if isinstance(field.default, bool) else field.default
        return f"{name} is empty: send {wanted}, or leave {name} out for its default ({default})"
    if not field.required:
        return f"{name} is empty: send {wanted}, or leave {name} out"
    return f"{name} is empty: send {wanted}"


class StrictBooleanField(serializers.BooleanField):
    """JSON true or false only. DRF's BooleanField reads "yes", "on", 1 and "0" as booleans (and a form without
    the field as false): a typo would mark work done or not done instead of being refused by name."""

    default_error_messages = {"invalid": "{name} must be true or false (a JSON boolean), not {input}."}

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, bool):
            return data
        self.fail("invalid", name=self.field_name, input=_shown(data))

    def bind(self, field_name: str, parent: Any) -> None:
        super().bind(field_name, parent)
        self.error_messages = {**self.error_messages, "null": f"{field_name} must be true or false, not null."}

    def get_value(self, dictionary: Mapping[str, Any]) -> Any:
        # Not BooleanField's form reading, where a missing field counts as false.
        return dictionary.get(self.field_name, empty)


def _shown(value: Any) -> str:
    """A refused value as the caller wrote it: ``"yes"``, ``1``, ``null``."""
    try:
        return json.dumps(value, ensure_ascii=False)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


@extend_schema_field({"type": "string", "format": "binary"})
class UploadField(serializers.FileField):
    """A file part of a multipart body, described as OpenAPI describes an upload (spectacular's own mapping of a
    FileField describes how a stored file is shown, as a URI): every import's ``file`` field.

    An empty file is refused naming it (DRF's own words, "The submitted file is empty.", name none, and an import
    may send several files)."""

    def to_internal_value(self, data: Any) -> Any:
        name, size = getattr(data, "name", None), getattr(data, "size", None)
        if name and size == 0 and not self.allow_empty_file:
            raise serializers.ValidationError(f"{name}: the file is empty (0 bytes); nothing was imported")
        return super().to_internal_value(data)
