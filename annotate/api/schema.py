"""The OpenAPI schema's view of every operation's errors, so /api/schema/ lists what the API really answers.

Each endpoint declares its own successes and its particular errors with
``extend_schema`` (409 on a stale span, 503 while the model loads, ...). The
errors every endpoint shares are added here, so a new endpoint gets them
without repeating them:

- 400 with field errors, field -> [messages] (annotate.api.errors), when the operation reads a body or
  query parameters (a paginated list's limit and offset too: annotate.api.pagination);
- 401 for a call without valid credentials (token auth is the first
  authentication class, so DRF answers 401 with ``WWW-Authenticate: Token``);
- 403 on writes (a session call without its CSRF token, or a role that may
  not write);
- 404 when the path names an object (one the caller may not see answers 404
  too, never 403, so its existence does not leak).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import force_instance, is_field, is_patched_serializer
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework.permissions import IsAuthenticated

from annotate.api.serializers import (
    MAX_ID,
    MAX_ROUND,
    MAX_VERSION,
    ErrorSerializer,
    FieldErrorsSerializer,
    SpanConflictSerializer,
)
from annotate.api.validation import RejectsUnknownFields

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


# --------------------------------------------------------------------------- parameters and responses for views


def integer(minimum: int, maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


def id_in_path(what: str) -> OpenApiParameter:
    return OpenApiParameter("id", integer(1, MAX_ID), OpenApiParameter.PATH, description=f"The {what}'s id.")


SAMPLE_ID = id_in_path("sample")
SPAN_ID = id_in_path("span")
BATCH_ID = id_in_path("batch")
ROUND_QUERY = OpenApiParameter(
    "round", integer(1, MAX_ROUND), OpenApiParameter.QUERY,
    description="Round number: 1, or 2 for reconciliation (default 1).",
)
VERSION_QUERY = OpenApiParameter(
    "version", integer(1, MAX_VERSION), OpenApiParameter.QUERY, required=True,
    description="The version you last read (a JSON body's `version` is read when the query has none); without it, "
    "400. A stale one gets 409.",
)
SPAN_CONFLICT = OpenApiResponse(
    SpanConflictSerializer,
    description=(
        "Nothing was changed: the version is stale (`current` is the span as it is now; a span deleted meanwhile, "
        "in another tab, answers 404 as any span that does not exist), "
        "or the round is frozen because it was submitted (`frozen` is true)."
    ),
)
SPAN_EXISTS_OR_FROZEN = OpenApiResponse(
    SpanConflictSerializer,
    description=(
        "Nothing was saved: you already have a span with these offsets and labels on the sample but with another "
        "note or source link (`existing` is its id and `current` the span: edit it with PATCH instead), or the "
        "round is frozen (`frozen` is true): submitted, or round 1 once round 2 of the batch opened, when "
        '`resend_with` names the field and the value to send instead (`{"round": 2}`; `round` defaults to 1).'
    ),
)
# Every 400's body (annotate.api.errors): each field at fault, or non_field_errors, with its messages.
FIELD_MESSAGES: dict[str, Any] = {"type": "array", "items": {"type": "string"}, "minItems": 1}
FIELD_ERRORS_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": FIELD_MESSAGES, "minProperties": 1}
SPAN_FIELD_ERRORS = OpenApiResponse(
    FIELD_ERRORS_SCHEMA,
    description=(
        "Bad input; nothing was changed. Each field at fault (or `non_field_errors`, e.g. for a body that is not "
        "JSON) with a list of messages: a bad value, a field that does not exist or that may not be changed "
        '(`{"sample": ["sample is read-only (...); nothing was saved"]}`), or '
        '`{"start": ["start must be before end (5..2)"]}`.'
    ),
)
ROUND_FROZEN = OpenApiResponse(
    SpanConflictSerializer,
    description="Nothing was changed: the round is frozen (`frozen` is true) because it was submitted, or it is "
    'round 1 and round 2 of the batch opened: then `resend_with` names the value to send (`{"round": 2}`).',
)


# --------------------------------------------------------------------------- errors every operation shares

FIELD_ERRORS = OpenApiResponse(
    FIELD_ERRORS_SCHEMA,
    description=(
        "Bad input; nothing was changed. An object keyed by the field or query parameter at fault "
        "(or non_field_errors, e.g. for a body that is not JSON), each with a list of messages, e.g. "
        '`{"round": ["Ensure this value is greater than or equal to 1."]}`; a bad item of a list names '
        'itself in its message (`{"span_ids": ["span_ids[0]: A valid integer is required."]}`).'
    ),
)
NOT_AUTHENTICATED = OpenApiResponse(
    ErrorSerializer,
    description="No credentials, or a bad token; the answer carries `WWW-Authenticate: Token`.",
)
FORBIDDEN = OpenApiResponse(
    ErrorSerializer, description="Your role in the project does not allow this (or a session call lacks its CSRF token)."
)
NOT_FOUND = OpenApiResponse(
    ErrorSerializer, description="No such object, or one in a project or batch you may not see."
)


class FaithLabAutoSchema(AutoSchema):
    def _map_basic_serializer(self, serializer: Any, direction: str) -> dict[str, Any]:
        schema = super()._map_basic_serializer(serializer, direction)
        # A body whose serializer answers 400 to any other key says so: no extra properties.
        instance = force_instance(serializer)
        if isinstance(instance, RejectsUnknownFields):
            schema["additionalProperties"] = False
            if type(instance).__doc__ is None:  # not the base class's docstring, which is about our code
                schema.pop("description", None)
            # A PATCH body is all optional, except what the serializer still requires of a partial write.
            if is_patched_serializer(instance, direction) and instance.required_when_partial:
                schema["required"] = sorted(instance.required_when_partial)
        # A 400 body that documents some fields by name may still name any other, with a list of messages.
        if isinstance(instance, FieldErrorsSerializer):
            schema.update(additionalProperties=FIELD_MESSAGES, minProperties=1)
        return schema

    def _get_response_for_code(
        self, serializer: Any, status_code: str, media_types: Any = None, direction: str = "response"
    ) -> dict[str, Any]:
        # A response keyed by name (detector -> scores) is a DictField whose child serializer documents each field;
        # spectacular maps fields only inside serializers, so the field is mapped here and passed on as a schema.
        if is_field(serializer):
            serializer = self._map_serializer_field(serializer, direction)
        return super()._get_response_for_code(serializer, status_code, media_types, direction)

    def get_operation(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        parameters = operation.get("parameters", [])
        reads_query = any(p["in"] == "query" for p in parameters)
        shared: dict[str, OpenApiResponse] = {}
        if "requestBody" in operation or reads_query:
            shared["400"] = FIELD_ERRORS
        if any(issubclass(permission, IsAuthenticated) for permission in self.view.permission_classes):
            shared["401"] = NOT_AUTHENTICATED
        if self.method not in SAFE_METHODS:
            shared["403"] = FORBIDDEN
        if any(p["in"] == "path" for p in parameters):
            shared["404"] = NOT_FOUND
        responses = operation["responses"]
        for code, response in shared.items():
            responses.setdefault(code, self._get_response_for_code(response, code))
        operation["responses"] = dict(sorted(responses.items()))
        return operation
