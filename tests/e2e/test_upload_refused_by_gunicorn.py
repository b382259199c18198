"""An import over FAITHLAB_MAX_UPLOAD_MB through gunicorn, the README's production server, in a real browser: the
page shows the refusal, not Chromium's "connection was reset".

gunicorn reads at most 64 KB of a body the app left unread before it closes the connection; while the browser is
still sending, it then shows its own error page. The upload limit stops keeping a refused body but reads it to its
end (up to annotate.uploads.DRAIN_FLOOR_BYTES or more), which the Django test client cannot show: this test runs gunicorn for real."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PASSWORD
from tests.loopback import answers, free_port

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SETUP = f"""
from django.contrib.auth import get_user_model
from annotate.models import Membership, Project
admin = get_user_model().objects.create_user(username="adam", password={PASSWORD!r}, is_staff=True)
project = Project.objects.create(name="Demo", slug="demo")
Membership.objects.create(project=project, user=admin, role=Membership.Role.ADMIN)
"""


@pytest.fixture
def gunicorn_url(tmp_path: Path) -> Iterator[str]:
    """gunicorn as the README starts it (gthread), over plain http on loopback, with a 1 MB upload limit."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DJANGO_", "CELERY_"))}
    env.update(FAITHLAB_DATA_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", DEBUG="false",
               SECRET_KEY="a-test-secret-key-that-is-long-enough-for-django-checks-0123456789",
               SESSION_COOKIE_SECURE="false", CSRF_COOKIE_SECURE="false", FAITHLAB_MAX_UPLOAD_MB="1")
    for command in (["manage.py", "migrate", "--noinput", "-v0"], ["manage.py", "shell", "-c", SETUP]):
        done = subprocess.run([sys.executable, *command], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "gunicorn"), "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1", "--threads", "4",
         "--worker-class", "gthread"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while not answers(f"{url}/accounts/login/"):
            assert server.poll() is None, "gunicorn exited"
            assert time.monotonic() < deadline, "gunicorn did not answer"
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_a_20_mb_file_over_a_1_mb_limit_gets_the_refusal_page_not_a_connection_reset(
    gunicorn_url: str, page: Any, tmp_path: Path
) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b'{"passage_id": "p", "source": "One.", "summary": "One.", "generator": "g"}\n' * 270_000)
    assert big.stat().st_size > 19 * 1024 * 1024
    page.goto(f"{gunicorn_url}/accounts/login/")
    page.fill("input[name=username]", "adam")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{gunicorn_url}/")
    page.goto(f"{gunicorn_url}/projects/demo/")
    page.set_input_files("#import-files", str(big))
    with page.expect_navigation(timeout=60_000):
        page.click("form[action$='/import/'] button.primary")
    body = page.inner_text("body")
    assert "Nothing was imported. The upload is 19." in body or "Nothing was imported. The upload is 20." in body, body
    assert "over the 1 MB limit" in body
    assert page.url.startswith(f"{gunicorn_url}/projects/demo/")
