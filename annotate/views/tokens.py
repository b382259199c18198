"""The API tokens page (/account/tokens/): every logged-in user makes, lists and revokes their own tokens.

Not cached: the one answer that shows a new key must not be kept anywhere.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from annotate import access
from annotate.services import tokens
from annotate.views.members import HtmxHttpRequest


def _tokens_page(request: HtmxHttpRequest, *, status: int = 200, **extra: Any) -> HttpResponse:
    context = {"tokens": request.user.api_tokens.all(), "name_max_length": tokens.NAME_MAX_LENGTH, **extra}
    template = "annotate/tokens.html#tokens" if request.htmx else "annotate/tokens.html"
    return render(request, template, context, status=status)


@never_cache
@require_http_methods(["GET", "POST"])
@login_required
def token_list(request: HtmxHttpRequest) -> HttpResponse:
    """GET: your tokens. POST: make one; its key is in this answer and in no other."""
    if request.method == "GET":
        return _tokens_page(request)
    try:
        token, key = tokens.create_api_token(request.user, request.POST.get("name", ""))
    except tokens.TokenError as error:
        return _tokens_page(request, error=str(error), name=request.POST.get("name", ""), status=400)
    return _tokens_page(request, new_token=token, new_key=key)


@never_cache
@require_POST
@login_required
def token_revoke(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    token = access.get_api_token_for_user(request.user, pk)
    tokens.revoke_api_token(token)
    return _tokens_page(request, notice=f"Token {token.name!r} ({token.prefix}…) is revoked; it no longer works.")
