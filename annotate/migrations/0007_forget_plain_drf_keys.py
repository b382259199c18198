"""Old DRF keys no longer lie in the database in plain text once 0006 carried them over.

0006 copied each `authtoken_token` key into a named ApiToken (a sha256 digest and the key's first characters) and
left the old rows: every database copy and backup then still held keys that open the API as their users. This
migration deletes each old row whose key is stored as a digest now, so the keys keep working (through the digest)
and the plain text is gone. The table itself stays (it is rest_framework.authtoken's, an app no longer installed);
a row 0006 did not carry over (an empty key) is left alone. Like 0006 it uses its own copy of the digest and can run
twice. Reversing it cannot bring the keys back.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import migrations

OLD_TABLE = "authtoken_token"


def key_digest(key: str) -> str:
    """sha256 hex of the whole key, as 0006 and tokens.key_digest compute it."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def forget_plain_drf_keys(apps: Any, schema_editor: Any) -> None:
    """Delete every old key whose digest an ApiToken holds (revoked ones too: the key stays refused)."""
    connection = schema_editor.connection
    if OLD_TABLE not in connection.introspection.table_names():
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')} FROM {quote(OLD_TABLE)}")  # noqa: S608
        keys = [str(row[0]) for row in cursor.fetchall()]
    ApiToken = apps.get_model("annotate", "ApiToken")
    stored = set(ApiToken.objects.using(connection.alias).filter(
        digest__in=[key_digest(key) for key in keys]).values_list("digest", flat=True))
    carried = [key for key in keys if key and key_digest(key) in stored]
    with connection.cursor() as cursor:
        for key in carried:
            cursor.execute(f"DELETE FROM {quote(OLD_TABLE)} WHERE {quote('key')} = %s", [key])  # noqa: S608


class Migration(migrations.Migration):

    dependencies = [
        ("annotate", "0006_carry_over_drf_tokens"),
    ]

    operations = [
        migrations.RunPython(forget_plain_drf_keys, migrations.RunPython.noop, elidable=False),
    ]
