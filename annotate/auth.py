"""API authentication with the named tokens users make on /account/tokens/ (annotate.models.ApiToken)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import build_bearer_security_scheme_object
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.request import Request

from annotate.models import ApiToken
from annotate.services import tokens


class ApiTokenAuthentication(BaseAuthentication):
    """``Authorization: Token <key>``. Unknown, revoked or malformed keys get 401; no header lets the next class try.

    First in DEFAULT_AUTHENTICATION_CLASSES, so its ``WWW-Authenticate: Token`` is what an
    anonymous call gets with its 401.
    """

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword.lower().encode():
            return None
        if len(parts) != 2:
            raise AuthenticationFailed("Authorization header: give exactly one key after 'Token', without spaces.")
        try:
            key = parts[1].decode("ascii")
        except UnicodeDecodeError as error:
            raise AuthenticationFailed("Authorization header: a token key has only ASCII characters.") from error
        token = tokens.token_for_key(key)
        if token is None:
            raise AuthenticationFailed("Unknown API token.")
        if not token.is_active:
            raise AuthenticationFailed("This API token was revoked.")
        if not token.user.is_active:
            raise AuthenticationFailed("The token's user is inactive.")
        tokens.record_token_use(token)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Describes the token scheme in the OpenAPI schema (/api/schema/)."""

    target_class = "annotate.auth.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        scheme = build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix=ApiTokenAuthentication.keyword
        )
        scheme["description"] = "A key made on /account/tokens/: `Authorization: Token <key>`."
        return scheme
