"""Every HTML answer says it varies on ``HX-Request``, so a cache never serves an htmx fragment as a page.

Many pages answer an htmx request on their own address with a fragment (a filtered table, a run's progress)
and a plain request with the whole page. Without ``Vary: HX-Request`` a browser's or a proxy's cache may keep
either under the one address and hand the fragment back when the page is opened again (Back, a restored tab),
which shows a bare table without the site around it. Saying so on every HTML answer costs one header and
covers the pages of tomorrow too; JSON and files do not depend on the header and are left alone.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponseBase
from django.utils.cache import patch_vary_headers


class VaryOnHtmxMiddleware:
    """Adds ``HX-Request`` to the ``Vary`` header of every HTML response."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            patch_vary_headers(response, ("HX-Request",))
        return response
