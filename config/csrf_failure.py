"""The page a refused form gets (CSRF_FAILURE_VIEW): Django's view renders our 403_csrf.html with the request only,
so it could not say the one cause a reload never cures.

With DEBUG off the CSRF and session cookies are Secure (settings: CSRF_COOKIE_SECURE, SESSION_COOKIE_SECURE): a
browser keeps them only over HTTPS. A team trying the server on its network before it has TLS opens
http://host:port/, and every login is refused for a missing CSRF cookie, while the usual advice (reload and try
again) cannot help. That case gets its own words naming the settings; every other refusal keeps the usual page.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import REASON_NO_CSRF_COOKIE
from django.shortcuts import render


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    secure_cookie_over_http = (
        reason == REASON_NO_CSRF_COOKIE and settings.CSRF_COOKIE_SECURE and not request.is_secure()
    )
    return render(request, "403_csrf.html", {"secure_cookie_over_http": secure_cookie_over_http}, status=403)
