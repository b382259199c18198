"""Settings read from the environment: typed values, safe defaults, and one clear line for a bad value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import SettingError, broker_url, envbool, envheader, envint, envloglevel, envtimezone, writable_folder

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
SECURITY_VARIABLES = (
    "DEBUG", "SECRET_KEY", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
    "SECURE_SSL_REDIRECT", "SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
)


# Other settings whose defaults these tests read.
READ_HERE = ("LOG_LEVEL", "CELERY_TASK_TIME_LIMIT", "CELERY_TASK_SOFT_TIME_LIMIT", "CELERY_BROKER_URL")


def clean_env(tmp_path: Path, **values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in (*SECURITY_VARIABLES, *READ_HERE)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env["FAITHLAB_DATA_DIR"] = str(tmp_path)
    env.update(values)
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def settings_seen(tmp_path: Path, **values: str) -> dict:
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({name: getattr(s, name) for name in "
        "['DEBUG', 'SECURE_HSTS_SECONDS', 'SECURE_HSTS_INCLUDE_SUBDOMAINS', 'SECURE_HSTS_PRELOAD', "
        "'SECURE_SSL_REDIRECT', 'SECURE_PROXY_SSL_HEADER', 'SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE']}))"
    )
    result = run([PYTHON, "manage.py", "shell", "--no-imports", "-c", code], clean_env(tmp_path, **values))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- the typed readers


def test_envbool_reads_the_usual_spellings_and_rejects_others(monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in [("true", True), ("ON", True), ("1", True), ("no", False), ("False", False), ("", True)]:
        monkeypatch.setenv("FLAG", raw)
        assert envbool("FLAG", True) is expected
    monkeypatch.setenv("FLAG", "maybe")
    with pytest.raises(SettingError, match=r"^FLAG='maybe' is not a boolean; use true or false$"):
        envbool("FLAG", True)


def test_envint_rejects_words_and_values_below_its_minimum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COUNT", raising=False)
    assert envint("COUNT", 7) == 7
    monkeypatch.setenv("COUNT", "31536000")
    assert envint("COUNT", 0, minimum=0) == 31536000
    monkeypatch.setenv("COUNT", "abc")
    with pytest.raises(SettingError, match=r"COUNT='abc' is not a whole number"):
        envint("COUNT", 0)
    monkeypatch.setenv("COUNT", "-5")
    with pytest.raises(SettingError, match=r"COUNT='-5' must be a whole number of 0 or more"):
        envint("COUNT", 0, minimum=0)


def test_envheader_takes_django_keys_or_header_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROXY", raising=False)
    assert envheader("PROXY") is None
    monkeypatch.setenv("PROXY", "HTTP_X_FORWARDED_PROTO,https")
    assert envheader("PROXY") == ("HTTP_X_FORWARDED_PROTO", "https")
    monkeypatch.setenv("PROXY", " X-Forwarded-Proto , https ")
    assert envheader("PROXY") == ("HTTP_X_FORWARDED_PROTO", "https")
    for bad in ["https", "HTTP_X_FORWARDED_PROTO,", "X Forwarded,https", "a,b,c"]:
        monkeypatch.setenv("PROXY", bad)
        with pytest.raises(SettingError, match=r"^PROXY=.* is not a header and its value; use e\.g\. HTTP_X_"):
            envheader("PROXY")


def test_envloglevel_takes_the_standard_names_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEVEL", raising=False)
    assert envloglevel("LEVEL", "INFO") == "INFO"
    for raw, expected in [("debug", "DEBUG"), (" Warning ", "WARNING"), ("ERROR", "ERROR"), ("critical", "CRITICAL")]:
        monkeypatch.setenv("LEVEL", raw)
        assert envloglevel("LEVEL", "INFO") == expected
    for bad in ["loud", "10", "WARN", "notset"]:
        monkeypatch.setenv("LEVEL", bad)
        with pytest.raises(SettingError, match=rf"^LEVEL={bad!r} is not a log level; use one of DEBUG, INFO, "
                                               r"WARNING, ERROR, CRITICAL \(any case\)$"):
            envloglevel("LEVEL", "INFO")


def test_writable_folder_refuses_a_folder_this_process_cannot_write(tmp_path: Path) -> None:
    made = writable_folder("DATA", tmp_path / "new" / "var")
    assert made.is_dir()
    if os.geteuid() == 0:
        # root writes into a read-only folder anyway: a folder below a plain file is one nobody can create.
        (tmp_path / "a-file").write_text("")
        folder = tmp_path / "a-file" / "var"
    else:
        folder = tmp_path / "read-only"
        folder.mkdir(mode=0o500)
    with pytest.raises(SettingError, match=rf"^DATA='{folder}' is not a folder this process can write to \(.+\); "
                                           r"point it at a writable folder$"):
        writable_folder("DATA", folder)


def test_broker_url_takes_the_transports_kombu_can_load(monkeypatch: pytest.MonkeyPatch) -> None:
    for url in ["redis://cache:6379/0", "rediss://:pw@cache:6380/1", "amqp://u:pw@rabbit:5672//", "filesystem://",
                "redis://a:6379/0;redis://b:6379/0"]:
        monkeypatch.setenv("BROKER", url)
        assert broker_url("BROKER", "filesystem://") == url
    for url, why in [("foo://x", "\\(scheme 'foo'\\).*no such transport"), ("redis", "is not a URL \\(no scheme://\\)"),
                     ("redis://a;foo://b", "\\(scheme 'foo'\\)"),
                     ("os.path://x", "\\(scheme 'os.path'\\).*no such transport")]:
        monkeypatch.setenv("BROKER", url)
        with pytest.raises(SettingError, match=f"^BROKER {why}"):
            broker_url("BROKER", "filesystem://")


def test_a_broker_whose_client_library_is_missing_is_refused_by_name(tmp_path: Path) -> None:
    code = (
        "import os, sys; sys.modules['redis'] = None  # as without the package\n"
        "from config.env import SettingError, broker_url\n"
        "os.environ['BROKER'] = 'redis://:secret@cache:6379/0'\n"
        "try:\n    broker_url('BROKER', 'filesystem://')\nexcept SettingError as error:\n    print(error)\n"
    )
    shown = run([PYTHON, "-c", code], clean_env(tmp_path))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("BROKER (scheme 'redis') is not a broker URL this install can use (its client "
                                   "library is missing)")
    assert "secret" not in shown.stdout


def test_the_redis_transport_loads_its_client_library() -> None:
    """kombu's redis transport imports `redis` only when it is built: without the package (requirements.txt) a
    redis:// broker failed at the worker's start. Built here without connecting to any server."""
    import redis
    from kombu import Connection
    from kombu.transport.redis import Transport

    transport = Connection("redis://127.0.0.1:1/0").transport
    assert isinstance(transport, Transport)
    assert transport.driver_version() == redis.__version__


def test_envtimezone_takes_iana_names_and_refuses_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZONE", raising=False)
    assert envtimezone("ZONE", "UTC") == "UTC"
    monkeypatch.setenv("ZONE", " Europe/Paris ")
    assert envtimezone("ZONE", "UTC") == "Europe/Paris"
    for bad in ["Mars/Olympus", "Europe", "/UTC", "../etc/passwd", "zone.tab", "Europe/"]:
        monkeypatch.setenv("ZONE", bad)
        with pytest.raises(SettingError, match=rf"^ZONE={bad!r} is not a time zone this machine knows; use an IANA "
                                               r"name such as UTC or Europe/Paris$"):
            envtimezone("ZONE", "UTC")


# --------------------------------------------------------------------------- settings as a process sees them


def test_the_time_zone_comes_from_the_environment(tmp_path: Path) -> None:
    code = ("from django.conf import settings; from django.utils import timezone; "
            "print(settings.TIME_ZONE, timezone.get_current_timezone_name())")
    shown = run([PYTHON, "manage.py", "shell", "--no-imports", "-c", code],
                clean_env(tmp_path, FAITHLAB_TIME_ZONE="Europe/Paris"))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["Europe/Paris", "Europe/Paris"]
    default = run([PYTHON, "manage.py", "shell", "--no-imports", "-c", code], clean_env(tmp_path))
    assert default.stdout.split() == ["UTC", "UTC"]


def test_log_level_takes_any_case_of_the_standard_names(tmp_path: Path) -> None:
    code = "import logging; print(logging.getLevelName(logging.getLogger().level))"
    shown = run([PYTHON, "manage.py", "shell", "--no-imports", "-c", code], clean_env(tmp_path, LOG_LEVEL="debug"))
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[-1] == "DEBUG"


def test_database_connections_are_checked_before_they_are_reused() -> None:
    """Kept connections (CONN_MAX_AGE) outlive a PostgreSQL restart; the health check reconnects instead of a 500."""
    from django.conf import settings

    assert settings.DATABASES["default"]["CONN_MAX_AGE"] > 0
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True


TASK_LIMITS = (
    "import json; from annotate import tasks as a; from judging import tasks as j; "
    "print(json.dumps({t.name.rsplit('.', 1)[-1]: [t.time_limit, t.soft_time_limit] for t in "
    "[a.embed_project_texts, a.refresh_figures, j.execute_judge_run]}))"
)


def test_celery_task_time_limit_caps_every_task_and_the_defaults_change_none(tmp_path: Path) -> None:
    """Limits set on a task win over Celery's settings: the setting did nothing until each task took the lower."""
    def limits(**values: str) -> dict:
        shown = run([PYTHON, "manage.py", "shell", "--no-imports", "-c", TASK_LIMITS], clean_env(tmp_path, **values))
        assert shown.returncode == 0, shown.stderr
        return json.loads(shown.stdout.strip().splitlines()[-1])

    assert limits() == {"embed_project_texts": [3600, 3500], "refresh_figures": [540, 500],
                        "execute_judge_run": [3600, 3300]}
    # The soft limit follows, 60 s (a tenth) before: a job still gets to record that it stopped.
    assert limits(CELERY_TASK_TIME_LIMIT="600") == {"embed_project_texts": [600, 540], "refresh_figures": [540, 500],
                                                    "execute_judge_run": [600, 540]}
    assert limits(CELERY_TASK_TIME_LIMIT="300", CELERY_TASK_SOFT_TIME_LIMIT="200") == {
        "embed_project_texts": [300, 200], "refresh_figures": [300, 200], "execute_judge_run": [300, 200]}


def test_security_settings_are_off_for_the_embedded_run(tmp_path: Path) -> None:
    assert settings_seen(tmp_path) == {
        "DEBUG": True, "SECURE_HSTS_SECONDS": 0, "SECURE_HSTS_INCLUDE_SUBDOMAINS": False,
        "SECURE_HSTS_PRELOAD": False, "SECURE_SSL_REDIRECT": False, "SECURE_PROXY_SSL_HEADER": None,
        "SESSION_COOKIE_SECURE": False, "CSRF_COOKIE_SECURE": False,
    }


def test_security_settings_come_from_the_environment(tmp_path: Path) -> None:
    seen = settings_seen(
        tmp_path, DEBUG="false", SECRET_KEY="k" * 50, SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="true", SECURE_HSTS_PRELOAD="yes", SECURE_SSL_REDIRECT="on",
        SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https",
    )
    assert seen == {
        "DEBUG": False, "SECURE_HSTS_SECONDS": 31536000, "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True, "SECURE_SSL_REDIRECT": True,
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],  # a tuple, through JSON
        # Secure cookies follow DEBUG=false unless told otherwise.
        "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True,
    }
    assert settings_seen(tmp_path, DEBUG="false", SECRET_KEY="k" * 50, CSRF_COOKIE_SECURE="false")[
        "CSRF_COOKIE_SECURE"
    ] is False


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("DEBUG", "maybe", "DEBUG='maybe' is not a boolean; use true or false"),
        ("SECURE_HSTS_SECONDS", "abc", "SECURE_HSTS_SECONDS='abc' is not a whole number; use digits, e.g. 0"),
        ("SECURE_HSTS_SECONDS", "-1", "SECURE_HSTS_SECONDS='-1' must be a whole number of 0 or more"),
        ("SECURE_SSL_REDIRECT", "sometimes", "SECURE_SSL_REDIRECT='sometimes' is not a boolean; use true or false"),
        ("SECURE_PROXY_SSL_HEADER", "https", "SECURE_PROXY_SSL_HEADER='https' is not a header and its value; "
                                             "use e.g. HTTP_X_FORWARDED_PROTO,https"),
        ("DATABASE_URL", "nosuchdb://u:secret@h/db", "DATABASE_URL (scheme 'nosuchdb') is not a database URL; "
                                                     "use e.g. postgres://user:pass@host:5432/faithlab"),
        ("FAITHLAB_TIME_ZONE", "Mars/Olympus", "FAITHLAB_TIME_ZONE='Mars/Olympus' is not a time zone this machine "
                                               "knows; use an IANA name such as UTC or Europe/Paris"),
        ("FAITHLAB_MAX_UPLOAD_MB", "0", "FAITHLAB_MAX_UPLOAD_MB='0' must be a whole number of 1 or more"),
        ("LOG_LEVEL", "loud", "LOG_LEVEL='loud' is not a log level; use one of DEBUG, INFO, WARNING, ERROR, CRITICAL "
                              "(any case)"),
        ("HTTPX_LOG_LEVEL", "chatty", "HTTPX_LOG_LEVEL='chatty' is not a log level; use one of DEBUG, INFO, WARNING, "
                                      "ERROR, CRITICAL (any case)"),
        ("EMBEDDING_BATCH_SIZE", "0", "EMBEDDING_BATCH_SIZE='0' must be a whole number of 1 or more"),
        ("EMBEDDING_BATCH_SIZE", "-5", "EMBEDDING_BATCH_SIZE='-5' must be a whole number of 1 or more"),
        ("CELERY_TASK_TIME_LIMIT", "0", "CELERY_TASK_TIME_LIMIT='0' must be a whole number of 1 or more"),
        ("CELERY_TASK_TIME_LIMIT", "-60", "CELERY_TASK_TIME_LIMIT='-60' must be a whole number of 1 or more"),
        ("CELERY_TASK_SOFT_TIME_LIMIT", "0", "CELERY_TASK_SOFT_TIME_LIMIT='0' must be a whole number of 1 or more"),
        ("CELERY_TASK_SOFT_TIME_LIMIT", "4000", "CELERY_TASK_SOFT_TIME_LIMIT=4000 must not be more than "
                                                "CELERY_TASK_TIME_LIMIT=3600"),
        ("CELERY_BROKER_URL", "foo://secret@x", "CELERY_BROKER_URL (scheme 'foo') is not a broker URL this install can "
                                                "use (no such transport); use e.g. redis://host:6379/0, "
                                                "amqp://user:pass@host:5672// or filesystem://"),
        ("DATABASE_URL", "mysql://u:secret@h/db", "DATABASE_URL (scheme 'mysql') is not a database FaithLab runs on; "
                                                  "use PostgreSQL (postgres://user:pass@host:5432/faithlab) or SQLite "
                                                  "(sqlite:////path/to/file.sqlite3)"),
    ],
)
def test_a_bad_value_stops_manage_py_with_one_line(tmp_path: Path, variable: str, value: str, expected: str) -> None:
    result = run([PYTHON, "manage.py", "check"], clean_env(tmp_path, **{variable: value}))
    assert result.returncode != 0
    assert result.stderr.splitlines() == [f"FaithLab configuration error: {expected}"]
    assert "Traceback" not in result.stdout + result.stderr
    assert "secret" not in result.stderr  # the URL's password is not repeated


def test_a_data_folder_that_cannot_be_written_stops_manage_py_with_one_line(tmp_path: Path) -> None:
    """A real process: the folder lies below a plain file (an OSError even for root, who may write anywhere else)."""
    (tmp_path / "a-file").write_text("")
    result = run([PYTHON, "manage.py", "check"], clean_env(tmp_path, FAITHLAB_DATA_DIR=str(tmp_path / "a-file" / "var")))
    assert result.returncode == 2  # as every other setting error of manage.py
    [line] = result.stderr.splitlines()
    assert line.startswith(f"FaithLab configuration error: FAITHLAB_DATA_DIR='{tmp_path / 'a-file' / 'var'}' is not "
                           "a folder this process can write to (")
    assert "Traceback" not in result.stdout + result.stderr


def test_secret_key_is_required_without_debug(tmp_path: Path) -> None:
    result = run([PYTHON, "manage.py", "check"], clean_env(tmp_path, DEBUG="false"))
    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        "FaithLab configuration error: SECRET_KEY must be set when DEBUG is false"
    ]


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("SECURE_HSTS_PRELOAD", "perhaps", "SECURE_HSTS_PRELOAD='perhaps' is not a boolean; use true or false"),
        # The worker used to stop on kombu's KeyError (No such transport) with its traceback.
        ("CELERY_BROKER_URL", "foo://x", "CELERY_BROKER_URL (scheme 'foo') is not a broker URL this install can use "
                                         "(no such transport); use e.g. redis://host:6379/0, "
                                         "amqp://user:pass@host:5672// or filesystem://"),
    ],
)
def test_a_bad_value_stops_the_wsgi_app_and_the_worker_with_one_line(
        tmp_path: Path, variable: str, value: str, expected: str) -> None:
    env = clean_env(tmp_path, **{variable: value})
    line = f"FaithLab configuration error: {expected}"
    wsgi = run([PYTHON, "-c", "import config.wsgi"], env)
    assert wsgi.returncode == 4  # gunicorn's "App failed to load": the master halts
    assert wsgi.stderr.splitlines() == [line]
    worker = run([str(Path(PYTHON).parent / "celery"), "-A", "config", "worker", "--pool=solo"], env)
    assert worker.returncode != 0
    assert worker.stderr.splitlines() == [line]
    assert "Traceback" not in worker.stdout + worker.stderr
