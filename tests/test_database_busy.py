"""A write that finds SQLite locked by another connection answers 503 "busy, try again", as JSON under /api/.

The real thing: a process with its own SQLite file (the embedded default's
settings), where a second connection holds ``BEGIN IMMEDIATE`` while the app
saves a span through the API and imports a file through the project page, with
the connection's busy timeout lowered from 20 s to 0.2 s. Then the lock is
released and the same save succeeds.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.contrib.sessions.backends.db import SessionStore
from django.db import OperationalError
from django.test import Client, RequestFactory

from config.database_busy import BUSY_DETAIL, SESSION_BUSY_DETAIL, DatabaseBusyMiddleware, is_database_busy

ROOT = Path(__file__).resolve().parent.parent


def scenario() -> None:
    """Run in the subprocess: build a project, lock the database from a second connection, ask, print the answers."""
    import sqlite3

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client

    from annotate.models import Membership, Project, Sample, SpanAnnotation
    from annotate.services.ingest import import_batches, parse_samples_jsonl
    from annotate.services.projects import assign_annotators
    from annotate.services.tokens import create_api_token

    call_command("migrate", verbosity=0)
    users = get_user_model()
    admin = users.objects.create_user(username="adam", is_staff=True)
    annotator = users.objects.create_user(username="alice")
    project = Project.objects.create(name="Busy", slug="busy")
    Membership.objects.create(project=project, user=admin, role=Membership.Role.ADMIN)
    Membership.objects.create(project=project, user=annotator, role=Membership.Role.ANNOTATOR)
    line = json.dumps({"passage_id": "p", "source": "A source text.", "summary": "A summary of it.", "generator": "g"})
    batch = import_batches(project, parse_samples_jsonl(line, "first.jsonl")).batches[0]
    assign_annotators(batch, [annotator])
    sample = Sample.objects.get()
    token = create_api_token(annotator, "test")[1]
    api = Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token}")
    page = Client(raise_request_exception=False)
    page.force_login(admin)  # the session is written now, before the lock
    span = json.dumps({"sample": sample.pk, "round": 1, "start": 2, "end": 9, "labels": ["Questionable"]})
    upload = json.dumps({"passage_id": "q", "source": "Another source.", "summary": "Another.", "generator": "g"})

    connection.settings_dict["OPTIONS"]["timeout"] = 0.2  # the app's 20 s, lowered: the lock outlasts it anyway
    connection.close()
    holder = sqlite3.connect(settings.DATABASES["default"]["NAME"], isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    answers = {}
    for debug in (False, True):
        settings.DEBUG = debug
        saved = api.post("/api/spans/", span, content_type="application/json")
        imported = page.post(f"/projects/{project.slug}/import/",
                             {"files": [SimpleUploadedFile("second.jsonl", upload.encode())]})
        answers[f"debug={debug}"] = {
            "api": [saved.status_code, saved.headers.get("Content-Type"), saved.headers.get("Retry-After"),
                    saved.content.decode()],
            "page": [imported.status_code, imported.headers.get("Content-Type"), imported.headers.get("Retry-After"),
                     imported.content.decode()],
        }
    answers["written while locked"] = [SpanAnnotation.objects.count(), Project.objects.get().batches.count()]
    holder.execute("ROLLBACK")
    answers["after"] = api.post("/api/spans/", span, content_type="application/json").status_code
    print(json.dumps(answers))


def test_a_locked_database_answers_503_with_retry_after_on_the_api_and_the_pages(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "DEBUG")}
    env.update(FAITHLAB_DATA_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="config.settings", LOG_LEVEL="WARNING",
               EMBEDDING_WARMUP="false")
    result = subprocess.run([sys.executable, "-c", "import tests.test_database_busy as t; t.scenario()"], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    for mode in ("debug=False", "debug=True"):
        status, content_type, retry_after, body = answers[mode]["api"]
        assert (status, content_type, retry_after) == (503, "application/json", "10"), (mode, body)
        assert json.loads(body) == {"detail": BUSY_DETAIL}
        status, content_type, retry_after, html = answers[mode]["page"]
        assert (status, retry_after) == (503, "10"), (mode, html[:300])
        assert content_type.startswith("text/html")
        assert "<title>Busy, try again · FaithLab</title>" in html
        assert "The database is busy with a long write" in html
        assert "Traceback" not in html and "OperationalError" not in html
    assert answers["written while locked"] == [0, 1]  # the first import's batch only
    assert answers["after"] == 201
    assert "database busy: POST /api/spans/ answered 503 (database is locked)" in result.stderr
    assert "Internal Server Error" not in result.stderr


def test_only_a_lock_counts_as_busy_other_database_errors_stay_server_errors() -> None:
    request = RequestFactory().post("/api/spans/")
    middleware = DatabaseBusyMiddleware(lambda request: None)  # type: ignore[arg-type, return-value]
    assert is_database_busy(OperationalError("database is locked"))
    assert is_database_busy(OperationalError("database table is locked: annotate_sample"))
    assert not is_database_busy(OperationalError("no such table: annotate_sample"))
    assert not is_database_busy(RuntimeError("database is locked"))
    assert middleware.process_exception(request, OperationalError("no such column: x")) is None
    response = middleware.process_exception(request, OperationalError("database is locked"))
    assert response is not None and response.status_code == 503


@pytest.mark.django_db
@pytest.mark.parametrize(("path", "json_answer"), [("/", False), ("/api/projects/", True)])
def test_a_busy_session_save_after_the_view_answers_503_not_500(
    admin_user: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, path: str,
    json_answer: bool,
) -> None:
    # The session middleware saves after the view, outside every view's process_exception; every request saves here.
    settings.SESSION_SAVE_EVERY_REQUEST = True
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)  # saved now, before the database turns busy

    def locked(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("database is locked")

    monkeypatch.setattr(SessionStore, "save", locked)
    with caplog.at_level(logging.WARNING):
        response = client.get(path)
    assert (response.status_code, response.headers.get("Retry-After")) == (503, "10"), response.content[:300]
    if json_answer:
        assert response.json() == {"detail": SESSION_BUSY_DETAIL}
    else:
        html = response.content.decode()
        assert "<title>Busy, try again · FaithLab</title>" in html
        assert "could not save your session" in html and "Traceback" not in html
    assert f"database busy: GET {path} answered 503, saving the session (database is locked)" in caplog.text
    assert "Internal Server Error" not in caplog.text


@pytest.mark.django_db
def test_another_error_saving_the_session_stays_a_server_error(admin_user: Any, settings: Any,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    settings.SESSION_SAVE_EVERY_REQUEST = True
    client = Client(raise_request_exception=False)
    client.force_login(admin_user)

    def broken(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("no such table: django_session")

    monkeypatch.setattr(SessionStore, "save", broken)
    assert client.get("/").status_code == 500
