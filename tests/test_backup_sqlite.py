"""The README's SQLite backup (Backups): `manage.py backup`, run as the README writes it in another process, copies
the embedded database the app uses, rows and all, and a wrong data folder is an error that creates no database."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_backup_command() -> str:
    section = (ROOT / "README.md").read_text().split("### Backups", 1)[1].split("\n## ", 1)[0]
    [command] = re.findall(r"^\s*(\.venv/bin/python manage\.py backup [^#\n]*?)\s*(?:#.*)?$", section, re.MULTILINE)
    return command


def run(command: str, data_dir: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A README command line, with this checkout's interpreter and manage.py, on the embedded SQLite in data_dir."""
    env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
    env |= {"FAITHLAB_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "config.settings"}
    command = command.replace(".venv/bin/python", sys.executable, 1).replace("manage.py", str(ROOT / "manage.py"), 1)
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def rows(path: Path, table: str) -> list[tuple[object, ...]]:
    with sqlite3.connect(path) as database:
        return sorted(database.execute(f'SELECT * FROM "{table}"').fetchall(), key=repr)  # noqa: S608 (our names)


def test_the_readme_backup_copies_the_app_database_with_its_rows(tmp_path: Path) -> None:
    data = tmp_path / "data"
    for setup in (".venv/bin/python manage.py migrate -v0",
                  ".venv/bin/python manage.py shell -c \"from django.contrib.auth.models import User; "
                  "User.objects.create_user('kept', password='x'); from annotate.models import Project; "
                  "Project.objects.create(name='Kept 🌉', slug='kept')\""):
        made = run(setup, data, tmp_path)
        assert made.returncode == 0, made.stderr

    done = run(readme_backup_command(), data, tmp_path)

    assert done.returncode == 0, done.stderr
    [copy] = (tmp_path / "backups").glob("faithlab-*.sqlite3")
    assert f"to backups/{copy.name}" in done.stdout and "migrations applied" in done.stdout
    for table in ("auth_user", "annotate_project", "django_migrations"):
        assert rows(copy, table) == rows(data / "faithlab.sqlite3", table)
    assert any(row[1] == "Kept 🌉" for row in rows(copy, "annotate_project"))


def test_a_data_folder_without_the_database_is_an_error_that_creates_no_empty_database(tmp_path: Path) -> None:
    empty = tmp_path / "not-the-data"
    empty.mkdir()

    done = run(readme_backup_command(), empty, tmp_path)

    assert done.returncode == 1
    assert f"no database at {empty / 'faithlab.sqlite3'}" in done.stderr and "Nothing was copied" in done.stderr
    assert not (empty / "faithlab.sqlite3").exists()
    assert not list((tmp_path / "backups").glob("*"))


@pytest.mark.parametrize("url", ["postgres://someone@127.0.0.1:1/faithlab"])
def test_on_postgresql_it_points_to_pg_dump(tmp_path: Path, url: str) -> None:
    env = {**os.environ, "FAITHLAB_DATA_DIR": str(tmp_path), "DATABASE_URL": url}
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "backup", "--to", str(tmp_path / "b")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "back it up with pg_dump" in done.stderr
    assert not (tmp_path / "b").exists()


def test_a_file_name_for_the_folder_is_refused_and_makes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    made = run(".venv/bin/python manage.py migrate -v0", data, tmp_path)
    assert made.returncode == 0, made.stderr

    done = run(".venv/bin/python manage.py backup --to copy.sqlite3", data, tmp_path)

    assert done.returncode == 1
    assert "--to copy.sqlite3: give a folder, not a file name" in done.stderr
    assert not (tmp_path / "copy.sqlite3").exists()
