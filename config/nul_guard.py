"""Requests whose fields hold a NUL character are refused with a 400 before any view runs.

PostgreSQL cannot store NUL (U+0000) in text (a DataError: a 500), and it
cannot even look one up (``WHERE username = 'a\\x00'`` fails the same way);
SQLite takes it silently. Django's form CharFields and DRF's CharFields refuse
NUL, but several pages read their fields from ``request.POST`` directly (a new
project's name, a token's name, the label set editor, an import's roster, an
auditor's note, ...). One check here covers every page and endpoint, those of
tomorrow too: a query parameter or a form field (its name or a value) holding
NUL gets a 400 that names the field, and nothing is changed. Django's
multipart parser already drops NUL from uploaded files' names; JSON bodies are
checked by the API's parser (annotate.api.parsers), and uploaded files'
contents by the importers, which walk every value and key
(annotate.storable). A lone surrogate cannot reach a form field or a query
parameter (Django decodes them with U+FFFD for what is not UTF-8); the same
check refuses it where it can come (JSON bodies and files).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponseBadRequest, HttpResponseBase, JsonResponse, QueryDict
from django.shortcuts import render
from django.utils.html import escape
from rest_framework.views import APIView

from annotate.storable import Unstorable, find_unstorable_field


def _in_fields(fields: QueryDict) -> tuple[str, Unstorable] | None:
    """The first field of a query string or form body whose name or value holds NUL, and where in it."""
    return find_unstorable_field((name, values[0] if len(values) == 1 else values) for name, values in fields.lists())


def find_nul_in_request(request: HttpRequest) -> tuple[str, Unstorable] | None:
    """The field (and where in it) holding NUL among the request's query parameters or form fields."""
    if (found := _in_fields(request.GET)) is not None:
        return found
    if request.method == "POST":
        return _in_fields(request.POST)
    return None


def _is_api_view(view_func: Callable[..., Any]) -> bool:
    view_class = getattr(view_func, "cls", None)  # set by DRF's as_view
    return isinstance(view_class, type) and issubclass(view_class, APIView)


class NulGuardMiddleware:
    """Answers 400 to a request with NUL in a field: the API's shape (field -> [messages]) for API views."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], view_args: Any, view_kwargs: Any
    ) -> HttpResponseBase | None:
        located = find_nul_in_request(request)
        if located is None:
            return None
        field, found = located
        if _is_api_view(view_func):
            shown = found.problem if found.path == field else f"{found.path}: {found.problem}"
            return JsonResponse({field: [shown]}, status=400)
        message = f"Field '{found.path}': {found.problem}."
        if getattr(request, "htmx", False):  # a fragment for the part of the page that asked, never a whole page
            return HttpResponseBadRequest(
                f'<p class="error" role="alert" data-role="refusal">Nothing was changed. {escape(message)}</p>'
            )
        return render(request, "400.html", {"exception": message}, status=400)
