"""Upgrading an install that used DRF's authtoken: migration 0006 turns its keys into named ApiTokens.

The old table is made here with raw SQL, the way rest_framework.authtoken made it, on whichever database the suite
runs (SQLite by default, PostgreSQL under scripts/with-postgres.sh). Transactional tests: the migration runs inside
an entered schema editor, as `migrate` runs it, which SQLite refuses inside the atomic block of a plain db test.
"""

from __future__ import annotations

import importlib
import secrets
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from annotate.models import ApiToken
from annotate.services import tokens
from tests.conftest import login

migration = importlib.import_module("annotate.migrations.0006_carry_over_drf_tokens")
forgetting = importlib.import_module("annotate.migrations.0007_forget_plain_drf_keys")
pytestmark = pytest.mark.django_db(transaction=True)

OLD_KEY_MADE = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)

AddOldKey = Callable[[Any, datetime], str]


def run_migration() -> None:
    """0006 and then 0007, as `migrate` runs them on an upgrade."""
    with connection.schema_editor() as schema_editor:
        migration.carry_over_drf_tokens(apps, schema_editor)
        forgetting.forget_plain_drf_keys(apps, schema_editor)


def old_keys() -> list[str]:
    """The keys still in DRF's table, in plain text."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {quote('key')} FROM {quote('authtoken_token')}")  # noqa: S608
        return sorted(str(row[0]) for row in cursor.fetchall())


def api(key: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {key}")


def old_table_exists() -> bool:
    return migration.OLD_TABLE in connection.introspection.table_names()


@pytest.fixture
def add_old_key(transactional_db: None) -> Iterator[AddOldKey]:
    """Makes DRF's `authtoken_token` table; the returned function stores a DRF-style key (40 hex) for a user."""
    quote = connection.ops.quote_name
    users = quote(get_user_model()._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE {quote('authtoken_token')} ({quote('key')} varchar(40) NOT NULL PRIMARY KEY, "
            f"{quote('created')} {connection.data_types['DateTimeField']} NOT NULL, "
            f"{quote('user_id')} integer NOT NULL UNIQUE REFERENCES {users} ({quote('id')}))"
        )

    def add(user: Any, created: datetime) -> str:
        key = secrets.token_hex(20)  # what DRF's Token.generate_key makes
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {quote('authtoken_token')} ({quote('key')}, {quote('created')}, {quote('user_id')}) "  # noqa: S608
                "VALUES (%s, %s, %s)",
                [key, connection.ops.adapt_datetimefield_value(created), user.pk],
            )
        return key

    yield add
    with connection.cursor() as cursor:  # before the flush, which would not empty a table Django does not know
        cursor.execute(f"DROP TABLE {quote('authtoken_token')}")


def test_old_key_answers_as_its_own_user_after_the_migration(
    project: Any, admin_user: Any, alice: Any, add_old_key: AddOldKey
) -> None:
    admin_key = add_old_key(admin_user, OLD_KEY_MADE)
    alice_key = add_old_key(alice, OLD_KEY_MADE)
    refused = api(alice_key).get("/api/projects/")
    assert refused.status_code == 401 and refused.json() == {"detail": "Unknown API token."}

    run_migration()

    for key, role in ((admin_key, "admin"), (alice_key, "annotator")):
        response = api(key).get("/api/projects/")
        assert response.status_code == 200, response.content
        assert [(row["slug"], row["role"]) for row in response.json()["results"]] == [("demo", role)]
    carried = ApiToken.objects.get(user=alice)
    assert carried.name == migration.CARRIED_NAME
    assert carried.prefix == alice_key[: tokens.PREFIX_LENGTH]
    assert carried.digest == tokens.key_digest(alice_key)
    assert carried.created_at == OLD_KEY_MADE
    assert carried.last_used_at is not None and carried.revoked_at is None
    assert old_table_exists()  # rest_framework.authtoken's table, not ours to drop
    assert old_keys() == []  # but no key lies there in plain text any more: a backup holds only digests


def test_carried_token_is_listed_and_can_be_revoked_on_the_tokens_page(alice: Any, add_old_key: AddOldKey) -> None:
    key = add_old_key(alice, OLD_KEY_MADE)
    run_migration()
    token = ApiToken.objects.get(user=alice)
    client = login(alice)

    listed = client.get("/account/tokens/").content.decode()
    assert migration.CARRIED_NAME in listed
    assert f"<code>{key[: tokens.PREFIX_LENGTH]}…</code>" in listed and key not in listed
    assert "2025-03-14 09:26" in listed
    assert f"/account/tokens/{token.pk}/revoke/" in listed

    assert client.post(f"/account/tokens/{token.pk}/revoke/").status_code == 200
    refused = api(key).get("/api/projects/")
    assert refused.status_code == 401 and refused.json() == {"detail": "This API token was revoked."}


def test_running_the_migration_again_makes_no_duplicate(alice: Any, bob: Any, add_old_key: AddOldKey) -> None:
    keys = {add_old_key(alice, OLD_KEY_MADE), add_old_key(bob, OLD_KEY_MADE)}
    run_migration()
    ApiToken.objects.filter(user=alice).update(revoked_at=OLD_KEY_MADE)  # revoked since: must stay revoked
    run_migration()
    assert sorted(ApiToken.objects.values_list("user__username", flat=True)) == ["alice", "bob"]
    assert set(ApiToken.objects.values_list("digest", flat=True)) == {tokens.key_digest(key) for key in keys}
    assert ApiToken.objects.get(user=alice).revoked_at == OLD_KEY_MADE
    assert old_keys() == []


def test_a_key_not_carried_over_stays_in_the_old_table(alice: Any, add_old_key: AddOldKey) -> None:
    """0007 deletes only keys whose digest is kept: one 0006 did not carry (here: it never ran) is not lost."""
    key = add_old_key(alice, OLD_KEY_MADE)
    with connection.schema_editor() as schema_editor:
        forgetting.forget_plain_drf_keys(apps, schema_editor)
    assert old_keys() == [key] and not ApiToken.objects.exists()


def test_without_the_old_table_the_migration_does_nothing(alice: Any) -> None:
    tokens.create_api_token(alice, "made after the upgrade")
    assert not old_table_exists()
    run_migration()
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["made after the upgrade"]
    assert not old_table_exists()


@pytest.mark.parametrize("key", ["9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "fl_" + "x" * 43, "ключ"])
def test_migration_stores_keys_as_the_tokens_service_does(key: str) -> None:
    assert migration.key_digest(key) == tokens.key_digest(key) == forgetting.key_digest(key)
    assert migration.PREFIX_LENGTH == tokens.PREFIX_LENGTH
