"""Named API tokens: made by their user, shown once, stored as a sha256 digest, revoked but never deleted."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from annotate.models import ApiToken

# Marks our keys in logs and for secret scanners; part of the key and of the shown prefix.
KEY_MARK = "fl_"
PREFIX_LENGTH = 8  # "fl_" and five random characters: enough to tell a user's keys apart, useless to guess with
NAME_MAX_LENGTH = ApiToken._meta.get_field("name").max_length
# last_used_at is a hint for the tokens page, not an audit log: one UPDATE a minute per token at most.
USE_RECORDED_EVERY = timedelta(minutes=1)


class TokenError(ValueError):
    """Bad input for a token; the message names the field."""


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_api_token(user: AbstractBaseUser, name: str) -> tuple[ApiToken, str]:
    """A new token and its key. The key is returned this once and stored nowhere."""
    name = name.strip()
    if not name:
        raise TokenError("name: give the token a name, e.g. the script or machine that will use it")
    if len(name) > NAME_MAX_LENGTH:
        raise TokenError(f"name: at most {NAME_MAX_LENGTH} characters (it has {len(name)})")
    if ApiToken.objects.filter(user=user, name=name, revoked_at=None).exists():
        raise TokenError(f"name: you already have an active token called {name!r}; choose another name")
    key = KEY_MARK + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=key[:PREFIX_LENGTH], digest=key_digest(key))
    return token, key


def revoke_api_token(token: ApiToken) -> ApiToken:
    """Revoke a token for good; revoking it again keeps the first revocation time."""
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        ApiToken.objects.filter(pk=token.pk, revoked_at=None).update(revoked_at=token.revoked_at)
    return token


def token_for_key(key: str) -> ApiToken | None:
    """The token (with its user) whose digest matches the key, revoked or not; None for an unknown key."""
    return ApiToken.objects.select_related("user").filter(digest=key_digest(key)).first()


def record_token_use(token: ApiToken, now: datetime | None = None) -> None:
    now = now or timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= USE_RECORDED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
