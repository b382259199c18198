"""The app's 404 page with DEBUG on, as with DEBUG off.

With DEBUG on Django answers every 404 with its technical page, which lists
every URL pattern, and never calls ``handler404`` (templates/404.html: the
reason, in the app's layout, with a way back). ``make run`` runs with DEBUG on,
so that is the page a new user trying the demo met. :class:`NotFoundPageMiddleware`
answers the app's page in DEBUG too, built by Django's own ``handler404`` path,
so both modes show the same page:

- a view that raises ``Http404("No such project")``: ``process_exception``
  answers the page with that reason, before Django reaches its technical page;
- an address no URL pattern serves never reaches a view (so no
  ``process_exception``); Django's technical 404 comes back as a response
  with no ``request.resolver_match``, and ``__call__`` puts the app's
  page in its place with the generic reason ("There is no page at ...").

A middleware rather than a catch-all URL pattern: a catch-all would resolve
``/projects/demo`` and so stop CommonMiddleware's APPEND_SLASH redirect to
``/projects/demo/``, which only happens on a 404. The replacement keeps the
status 404, so that redirect still happens. It is the last middleware, so the
page renders inside the others as a view's page does (the user, the CSRF
cookie, messages). Answers that views return themselves (the API's JSON 404s,
DRF's ``NotFound``) are left as they are. ``DEBUG_TECHNICAL_404=true`` brings
Django's technical page back for developers; a 500 in DEBUG stays Django's
technical page, with its traceback.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.core.handlers.exception import get_exception_response
from django.http import Http404, HttpRequest, HttpResponseBase
from django.urls import Resolver404, get_resolver, get_urlconf


def _replaces_technical_404() -> bool:
    """Only in DEBUG (without DEBUG Django already answers the app's page), unless a developer asked for Django's."""
    return settings.DEBUG and not settings.DEBUG_TECHNICAL_404


def _app_not_found_page(request: HttpRequest, exception: Http404) -> HttpResponseBase:
    """What Django answers without DEBUG: ``handler404`` (templates/404.html), a 500 if that fails."""
    return get_exception_response(request, get_resolver(get_urlconf()), 404, exception)


class NotFoundPageMiddleware:
    """Answers 404s with the app's page in DEBUG, instead of Django's technical page listing the URL patterns."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.status_code == 404 and request.resolver_match is None and _replaces_technical_404():
            # No URL pattern matched: Django's resolver raised Resolver404 before any view (its class name gives
            # the page's generic reason). CommonMiddleware, outside this one, still redirects to the slashed address.
            return _app_not_found_page(request, Resolver404({"path": request.path_info}))
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponseBase | None:
        """A view's ``Http404``: the page with its message as the reason; other exceptions go on to Django."""
        if isinstance(exception, Http404) and _replaces_technical_404():
            return _app_not_found_page(request, exception)
        return None
