"""The API's one pagination: ``?limit=&offset=`` with a ceiling, and a 400 naming a bad value.

DRF's LimitOffsetPagination falls back to its defaults on a value it cannot
use (``limit=abc`` or ``offset=-5`` gave the first page, as if asked for) and
takes any limit. A script that mistypes its page size would then page
silently through other pages than it asked for; here it learns which
parameter is wrong, with the others in the same answer.
"""

from __future__ import annotations

import re
from typing import Any

from rest_framework.exceptions import ValidationError
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.settings import api_settings

from annotate.api.serializers import MAX_ID

MAX_LIMIT = 1000
MAX_OFFSET = MAX_ID  # past it, the database's OFFSET overflows (a 500 instead of an empty page)
_WHOLE_NUMBER = re.compile(r"[0-9]{1,19}")


def _whole_number(raw: str, low: int, high: int) -> int | None:
    """The number ``raw`` spells in plain ASCII digits, when it is within low..high; else None."""
    if not _WHOLE_NUMBER.fullmatch(raw) or not low <= int(raw) <= high:
        return None
    return int(raw)


class LimitOffsetPages(LimitOffsetPagination):
    """``limit`` 1..1000 items (default PAGE_SIZE), ``offset`` from 0; any other value is a 400 naming it."""

    max_limit = MAX_LIMIT

    def _page_query(self, request: Request) -> tuple[int, int]:
        """Both parameters checked at once, so one 400 names every bad one."""
        params = request.query_params
        limit, offset = self.default_limit, 0
        problems: dict[str, list[str]] = {}
        if self.limit_query_param in params:
            raw = params[self.limit_query_param]
            limit = _whole_number(raw, 1, MAX_LIMIT)
            if limit is None:
                problems[self.limit_query_param] = [
                    f"{raw!r} is not a page size: send a whole number of items from 1 to {MAX_LIMIT} "
                    f"(default {self.default_limit})"
                ]
        if self.offset_query_param in params:
            raw = params[self.offset_query_param]
            offset = _whole_number(raw, 0, MAX_OFFSET)
            if offset is None:
                problems[self.offset_query_param] = [
                    f"{raw!r} is not an offset: send a whole number of items to skip, from 0 (the first page)"
                ]
        if problems:
            raise ValidationError(problems)  # already the API's shape, field -> [messages]
        return limit, offset  # type: ignore[return-value]

    def get_limit(self, request: Request) -> int | None:
        return self._page_query(request)[0]

    def get_offset(self, request: Request) -> int:
        return self._page_query(request)[1]

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """The ranges the server takes, so the schema describes which values answer 400."""
        ranges = {
            self.limit_query_param: (
                {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                f"Items per page, 1 to {MAX_LIMIT} (default {api_settings.PAGE_SIZE}); another value gets 400.",
            ),
            self.offset_query_param: (
                {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET},
                "Items to skip, from 0 (the default, the first page); another value gets 400.",
            ),
        }
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            schema, description = ranges.get(parameter["name"], (parameter["schema"], parameter["description"]))
            parameter.update(schema=schema, description=description)
        return parameters
