"""The links of a paged list (``templates/_pages.html``) keep the list's other parameters: its round, its filters."""

from __future__ import annotations

from django.http import QueryDict


def page_query(query: QueryDict) -> str:
    """``query`` without its page number, URL-encoded: a page link adds its own ``page`` to it."""
    kept = query.copy()
    kept.pop("page", None)
    return kept.urlencode()
