"""Settings read from the environment: typed values, safe defaults, and one clear line for a bad value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.env import SettingError, envbool, envheader, envint, envtimezone

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
SECURITY_VARIABLES = (
    "DEBUG", "SECRET_KEY", "SECURE_HSTS_SECONDS", "SECURE_HSTS_INCLUDE_SUBDOMAINS", "SECURE_HSTS_PRELOAD",
    "SECURE_SSL_REDIRECT", "SECURE_PROXY_SSL_HEADER", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE",
)


def clean_env(tmp_path: Path, **values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SECURITY_VARIABLES}
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
    ],
)
def test_a_bad_value_stops_manage_py_with_one_line(tmp_path: Path, variable: str, value: str, expected: str) -> None:
    result = run([PYTHON, "manage.py", "check"], clean_env(tmp_path, **{variable: value}))
    assert result.returncode != 0
    assert result.stderr.splitlines() == [f"FaithLab configuration error: {expected}"]
    assert "Traceback" not in result.stdout + result.stderr
    assert "secret" not in result.stderr  # the URL's password is not repeated


def test_secret_key_is_required_without_debug(tmp_path: Path) -> None:
    result = run([PYTHON, "manage.py", "check"], clean_env(tmp_path, DEBUG="false"))
    assert result.returncode != 0
    assert result.stderr.splitlines() == [
        "FaithLab configuration error: SECRET_KEY must be set when DEBUG is false"
    ]


def test_a_bad_value_stops_the_wsgi_app_and_the_worker_with_one_line(tmp_path: Path) -> None:
    env = clean_env(tmp_path, SECURE_HSTS_PRELOAD="perhaps")
    line = "FaithLab configuration error: SECURE_HSTS_PRELOAD='perhaps' is not a boolean; use true or false"
    wsgi = run([PYTHON, "-c", "import config.wsgi"], env)
    assert wsgi.returncode == 4  # gunicorn's "App failed to load": the master halts
    assert wsgi.stderr.splitlines() == [line]
    worker = run([str(Path(PYTHON).parent / "celery"), "-A", "config", "worker", "--pool=solo"], env)
    assert worker.returncode != 0
    assert worker.stderr.splitlines() == [line]
    assert "Traceback" not in worker.stdout + worker.stderr
