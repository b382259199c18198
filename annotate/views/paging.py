"""The links of a paged list (``templates/_pages.html``) keep the list's other parameters: its round, its filters."""

from __future__ import annotations

from django.http import QueryDict


def page_query(query: QueryDict, name: str = "page") -> str:
    """``query`` without the page number ``name``, URL-encoded: a page link adds its own to it. A page with two paged
    lists names each list's number apart (the flags page: ``page``, ``resolved_page``), and each list's links keep
    the other's."""
    kept = query.copy()
    kept.pop(name, None)
    return kept.urlencode()
