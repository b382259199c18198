"""The README's PostgreSQL backup (Backups): its pg_dump and pg_restore commands, run as written against the suite's
PostgreSQL server, bring a project with its samples and spans back into a new database, row for row, restored by
another user than the one the dump was taken as (a new server's)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.db import connection
from psycopg import sql

from annotate.models import Batch, SpanAnnotation
from tests.e2e.worker_helpers import database_url

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the README's pg_dump and pg_restore need a PostgreSQL server: the suite has one only under "
               "scripts/with-postgres.sh (`make test` always runs under it); here the database is SQLite",
    ),
    pytest.mark.django_db(transaction=True),  # pg_dump, another process, sees only committed rows
]


def readme_backup_commands() -> tuple[str, str]:
    """The Backups section's pg_dump and pg_restore commands, as the README writes them."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Backups", 1)[1].split("\n## ", 1)[0]
    [dump] = re.findall(r"`(pg_dump [^`]+)`", section)
    [restore] = re.findall(r"`(pg_restore [^`]+)`", section)
    return dump, restore


def table_rows(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of the public schema with its rows in order, and every sequence with its position."""
    found: dict[str, list[tuple[Any, ...]]] = {}
    with psycopg.connect(url) as database:
        tables = [name for (name,) in database.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")]
        for table in tables:
            rows = database.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall()
            found[table] = sorted(rows, key=repr)
        for (sequence,) in database.execute(
                "SELECT sequencename FROM pg_sequences WHERE schemaname = 'public' ORDER BY 1").fetchall():
            found[f"sequence {sequence}"] = database.execute(
                sql.SQL("SELECT last_value, is_called FROM {}").format(sql.Identifier(sequence))).fetchall()
    return found


def test_the_readme_pg_dump_and_pg_restore_bring_a_project_back_into_a_new_database(
    batch: Batch, alice: Any, bob: Any, tmp_path: Path
) -> None:
    samples = list(batch.samples.order_by("position"))
    for sample, annotator in ((samples[0], alice), (samples[0], bob), (samples[2], alice)):
        word = sample.summary.split()[1]
        start = sample.summary.index(word)
        SpanAnnotation.objects.create(sample=sample, annotator=annotator, start=start, end=start + len(word),
                                      text=word, labels=["Unwanted", "Unwanted.Intrinsic"], note="🌉 not in the source",
                                      source_start=0, source_end=3, source_text="The")
    original = database_url()
    dump, restore = readme_backup_commands()
    env = {**os.environ, "DATABASE_URL": original}
    done = subprocess.run(["bash", "-c", dump], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    [dump_file] = tmp_path.glob("faithlab-*.dump")

    # Restored as another user than the one the dump was taken as, as on a new server: an empty database of its own.
    restorer = restored_name = f"faithlab_restored_{os.getpid()}"
    parts = urlsplit(original)
    restored = urlunsplit(parts._replace(netloc=f"{restorer}@{parts.hostname}:{parts.port}", path=f"/{restored_name}"))
    with psycopg.connect(original, autocommit=True) as database:
        database.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(restorer)))
        database.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(sql.Identifier(restored_name),
                                                                       sql.Identifier(restorer)))
    try:
        placeholder = "faithlab-….dump"
        assert placeholder in restore, restore
        env["DATABASE_URL"] = restored
        done = subprocess.run(["bash", "-c", restore.replace(placeholder, dump_file.name)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
        back, before = table_rows(restored), table_rows(original)
        assert back == before
        assert len(back["annotate_spanannotation"]) == 3 and len(back["annotate_sample"]) == len(samples)
        # "then run manage.py migrate if the code is newer than the dump": here it is not, so nothing to apply.
        done = subprocess.run([sys.executable, "manage.py", "migrate"], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "No migrations to apply." in done.stdout
    finally:
        with psycopg.connect(original, autocommit=True) as database:
            database.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(restored_name)))
            database.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(restorer)))
