"""What a request error logs: the app's own refusals one warning line each, real errors their traceback, once."""

from __future__ import annotations

import logging
import re
from typing import Any
from unittest import TestCase

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client
from django.urls import path

import config.urls
from annotate import access
from annotate.models import BlockedJudge, Membership, PairConfig, Project
from annotate.views import members
from tests.conftest import login

pytestmark = pytest.mark.django_db


def broken_view(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a real bug")


# The app's own addresses plus one that fails (used with pytest.mark.urls).
urlpatterns = [path("broken-for-logging-tests/", broken_view), *config.urls.urlpatterns]


def request_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "django.request"]


def test_a_refused_page_logs_one_warning_line_naming_user_path_and_reason(
        project: Project, alice: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="django.request"):
        assert login(alice).get("/projects/demo/members/").status_code == 403
    [record] = request_records(caplog)
    assert record.levelno == logging.WARNING
    assert record.exc_info is None and "Traceback" not in caplog.text
    message = record.getMessage()
    assert message.startswith("Forbidden: /projects/demo/members/ (user alice): ")
    assert "admin" in message.split("(user alice): ", 1)[1]  # the refusal's own reason


def test_a_refusal_reason_with_a_newline_stays_on_one_line(
        project: Project, alice: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise access.Forbidden("first line\nForged: second line")

    monkeypatch.setattr(members.access, "get_project_for_user", refuse)
    with TestCase().assertLogs("django.request", level="WARNING") as logs:
        assert login(alice).get("/projects/demo/members/").status_code == 403
    assert logs.output == [
        "WARNING:django.request:Forbidden: /projects/demo/members/ (user alice): first line\\nForged: second line"
    ]
    assert logs.records[0].exc_info is None


@pytest.mark.urls(__name__)
def test_a_server_error_still_logs_its_traceback(db: None, caplog: pytest.LogCaptureFixture) -> None:
    client = Client(raise_request_exception=False)
    with caplog.at_level(logging.INFO, logger="django.request"):
        assert client.get("/broken-for-logging-tests/").status_code == 500
    [record] = request_records(caplog)
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


def test_an_api_refusal_stays_one_line_and_names_the_user(admin_user: Any, alice: Any,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=pairs)
    Membership.objects.create(project=pairs, user=alice, role=Membership.Role.ANNOTATOR)
    BlockedJudge.objects.create(project=pairs, judge=alice, blocked_by=admin_user, reason="spam")
    with caplog.at_level(logging.INFO, logger="django.request"):
        assert login(alice).get("/api/pairs/next/?project=pairs").status_code == 403
    [record] = request_records(caplog)
    assert record.getMessage() == "Forbidden: /api/pairs/next/ (user alice)"
    assert record.exc_info is None


def test_a_request_error_reaches_the_console_once() -> None:
    """Django's own "django" console handler (DEBUG only) and the root's wrote every request error twice."""
    logger: logging.Logger | None = logging.getLogger("django.request")
    consoles = []
    while logger is not None:
        # Exactly StreamHandler: pytest's capture handlers are subclasses.
        consoles += [handler for handler in logger.handlers if type(handler) is logging.StreamHandler]
        logger = logger.parent if logger.propagate else None
    assert len(consoles) == 1


def test_a_csrf_refusal_names_the_user(project: Project, alice: Any, caplog: pytest.LogCaptureFixture) -> None:
    """CSRF failures are logged on django.security.csrf, not django.request: the filter is attached there too."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    with caplog.at_level(logging.INFO, logger="django.security.csrf"):
        assert client.post("/projects/new/", {"name": "Pilot"}).status_code == 403
    [record] = [record for record in caplog.records if record.name == "django.security.csrf"]
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert record.getMessage().startswith("Forbidden (CSRF ")
    assert record.getMessage().endswith(": /projects/new/ (user alice)")


def test_a_disallowed_host_logs_one_line_with_host_and_path(db: None, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="django.security"):
        assert Client().get("/accounts/login/", HTTP_HOST="evil.example").status_code == 400
    [record] = [record for record in caplog.records if record.name.startswith("django.security")]
    assert record.name == "django.security.DisallowedHost"
    assert record.exc_info is None and "Traceback" not in caplog.text
    assert record.levelno == logging.WARNING  # a client's mistake, as a refusal is
    message = record.getMessage()
    assert message.startswith("Invalid HTTP_HOST header: 'evil.example'.")
    assert message.endswith(" (path /accounts/login/)")
    assert "\n" not in message


def console_handler() -> logging.Handler:
    [handler] = [handler for handler in logging.getLogger().handlers if type(handler) is logging.StreamHandler]
    return handler


def test_a_console_line_says_when_how_bad_and_from_where() -> None:
    record = logging.LogRecord("django.request", logging.WARNING, __file__, 1, "Forbidden: %s", ("/x/",), None)
    line = console_handler().format(record)
    assert re.fullmatch(r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}\] WARNING django\.request: Forbidden: /x/", line), line


@pytest.mark.parametrize("url", ["/projects/demo/members/", "/api/pairs/next/?project=pairs"], ids=["page", "api"])
def test_logging_configured_twice_still_names_the_user_once(
        url: str, project: Project, admin_user: Any, alice: Any, caplog: pytest.LogCaptureFixture) -> None:
    """runserver (`make run`) runs django.setup() a second time when it imports config.wsgi, and dictConfig adds a
    logger's filters again without removing the first ones: each refusal read "(user alice) (user alice)"."""
    from config.log_filters import RefusalWithoutTraceback

    pairs = Project.objects.create(name="Pairs", slug="pairs", kind=Project.Kind.PAIRS)
    PairConfig.objects.create(project=pairs)
    Membership.objects.create(project=pairs, user=alice, role=Membership.Role.ANNOTATOR)
    BlockedJudge.objects.create(project=pairs, judge=alice, blocked_by=admin_user, reason="spam")
    logger = logging.getLogger("django.request")
    assert any(isinstance(found, RefusalWithoutTraceback) for found in logger.filters)
    second = RefusalWithoutTraceback()
    logger.addFilter(second)
    try:
        with caplog.at_level(logging.INFO, logger="django.request"):
            assert login(alice).get(url).status_code == 403
    finally:
        logger.removeFilter(second)
    [record] = request_records(caplog)
    assert record.getMessage().count("(user alice)") == 1, record.getMessage()
