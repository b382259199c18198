"""Keys made with DRF's authtoken (installs from before named tokens) keep working as named ApiTokens.

Those installs made keys with `manage.py drf_create_token` and sent them as `Authorization: Token <key>`, the
header our own authentication reads now; only the table behind it changed. Each row of `authtoken_token` becomes
an ApiToken of the same user, stored the way annotate/services/tokens.py stores keys (a sha256 digest and the
first characters). The digest is written out here rather than imported: a migration must keep doing what it did
when it was written, whatever tokens.py becomes (tests/test_upgrade_tokens.py checks that both still agree).

The old table stays: it belongs to rest_framework.authtoken, not to us. Running this twice adds nothing.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.db import migrations
from django.utils.dateparse import parse_datetime

OLD_TABLE = "authtoken_token"
CARRIED_NAME = "API token from before the upgrade"
PREFIX_LENGTH = 8  # as tokens.PREFIX_LENGTH: what the tokens page shows of a key


def key_digest(key: str) -> str:
    """sha256 hex of the whole key, as tokens.key_digest computes it."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _as_aware(value: Any) -> datetime | None:
    """The old row's `created` as an aware datetime: SQLite hands back naive UTC (or text), PostgreSQL aware."""
    if isinstance(value, str):
        value = parse_datetime(value)
    if isinstance(value, datetime) and value.tzinfo is None and settings.USE_TZ:
        value = value.replace(tzinfo=UTC)
    return value if isinstance(value, datetime) else None


def _old_rows(connection: Any) -> list[tuple[str, Any, int]]:
    """(key, created, user_id) of every DRF token; none when rest_framework.authtoken never made its table."""
    if OLD_TABLE not in connection.introspection.table_names():
        return []
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {quote('key')}, {quote('created')}, {quote('user_id')} FROM {quote(OLD_TABLE)}"  # noqa: S608
        )
        return list(cursor.fetchall())


def carry_over_drf_tokens(apps: Any, schema_editor: Any) -> None:
    """One ApiToken per old key whose digest is not stored yet, made when the old key was made."""
    connection = schema_editor.connection
    rows = _old_rows(connection)
    if not rows:
        return
    alias = connection.alias
    ApiToken = apps.get_model("annotate", "ApiToken")
    User = apps.get_model(settings.AUTH_USER_MODEL)
    known_users = set(User.objects.using(alias).filter(pk__in={row[2] for row in rows}).values_list("pk", flat=True))
    stored = set(ApiToken.objects.using(alias).values_list("digest", flat=True))
    for key, created, user_id in rows:
        key = str(key)
        digest = key_digest(key)
        if not key or digest in stored or user_id not in known_users:
            continue
        token = ApiToken.objects.using(alias).create(
            user_id=user_id, name=CARRIED_NAME, prefix=key[:PREFIX_LENGTH], digest=digest
        )
        made = _as_aware(created)
        if made is not None:  # created_at is auto_now_add, so the old time goes in with an update
            ApiToken.objects.using(alias).filter(pk=token.pk).update(created_at=made)
        stored.add(digest)


class Migration(migrations.Migration):

    dependencies = [
        ("annotate", "0005_pairs"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RunPython(carry_over_drf_tokens, migrations.RunPython.noop, elidable=False),
    ]
