"""What a project admin may make the server send, and where: only the API-key variables the operator allows for a
host (FAITHLAB_JUDGE_KEYS) are ever read and sent; a project admin who is not site staff points a judge at public
hosts or those listed in FAITHLAB_JUDGE_HOSTS only; redirects are never followed.

Every refusal is checked against a real loopback HTTP server: nothing (and no key) reaches it.
"""

from __future__ import annotations

import io
import json
import secrets
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from annotate.models import Membership, Project
from judging.clients import Endpoint, EndpointError, chat, check_endpoint
from judging.models import Judge, JudgeRun
from judging.services import runs
from judging.services.judges import JudgeSettingsError, create_judge
from judging.services.synthetic.sets import SyntheticSetError, create_synthetic_set
from tests.conftest import login, make_user
from tests.judging.llm_server import LoopbackLLM
from tests.judging.run_factories import add_samples

# FAITHLAB_JUDGE_KEYS and FAITHLAB_JUDGE_HOSTS as the settings hold them (config.env.envkeyhosts, envhosts).
DEFAULT_KEYS = (("OPENAI_API_KEY", "api.openai.com", None),)  # the default
MESSAGES = [{"role": "user", "content": "Reply with OK."}]


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


class Recorder:
    """A loopback HTTP server that records every request (method, path, headers) and answers each with a 302 to
    ``redirect_to``, or, without one, as an OpenAI-compatible endpoint serving the model "m"."""

    def __init__(self, redirect_to: str = "") -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                recorder.seen.append((self.command, self.path, dict(self.headers.items())))
                if redirect_to:
                    self.send_response(302)
                    self.send_header("Location", redirect_to + self.path.removeprefix("/v1"))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.command == "GET":
                    body = {"object": "list", "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "x"}]}
                else:
                    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
                        {"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": '{"reasoning": "fine", "score": 5}'}}]}
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def authorizations(self) -> list[str]:
        return [value for _, _, headers in self.seen for name, value in headers.items()
                if name.lower() == "authorization"]

    def __enter__(self) -> Recorder:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def secret(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """SECRET_KEY in this process's environment, as a deployment has it (Django's own settings read it at start)."""
    value = "django-secret-" + secrets.token_hex(16)
    monkeypatch.setenv("SECRET_KEY", value)
    yield value


@pytest.fixture
def default_keys(settings: Any) -> None:
    settings.FAITHLAB_JUDGE_KEYS = DEFAULT_KEYS


@pytest.fixture
def pam(project: Project) -> Any:
    """A project admin who is not site staff."""
    user = make_user("pam")
    Membership.objects.create(project=project, user=user, role=Membership.Role.ADMIN)
    return user


def create_url(project: Project) -> str:
    return reverse("judging-judge-create", args=[project.slug, "rubric"])


def form_post(base_url: str, api_key_env: str = "") -> dict[str, str]:
    return {
        "rubric-name": "probe", "rubric-base_url": base_url, "rubric-model": "m", "rubric-api_key_env": api_key_env,
        "rubric-with_reasoning": "on", "rubric-concurrency": "2", "rubric-timeout_seconds": "5",
        "rubric-max_retries": "0", "rubric-price_input_per_mtok": "", "rubric-price_output_per_mtok": "",
    }


def api_post(client: Client, project: Project, base_url: str, api_key_env: str = "") -> Any:
    body = {"name": "probe", "kind": "rubric", "base_url": base_url, "model": "m", "api_key_env": api_key_env}
    return client.post(f"/api/projects/{project.slug}/judges/", json.dumps(body), content_type="application/json")


def names_the_setting(message: str, variable: str = "SECRET_KEY") -> bool:
    return variable in message and "FAITHLAB_JUDGE_KEYS" in message and "not allowed" in message


# ----------------------------------------------------------------------------- API-key variables


@pytest.mark.usefixtures("default_keys")
def test_a_variable_not_allowed_is_never_read_nor_sent_to_the_endpoint(secret: str) -> None:
    with Recorder() as server:
        endpoint = Endpoint(base_url=server.base_url, model="m", api_key_env="SECRET_KEY", max_retries=0)
        for call in (lambda: chat(endpoint, MESSAGES), lambda: check_endpoint(endpoint)):
            with pytest.raises(EndpointError) as refused:
                call()
            assert refused.value.setting == "api_key_env" and refused.value.attempts == 0
            assert names_the_setting(str(refused.value)) and "127.0.0.1" in str(refused.value)
            assert secret not in str(refused.value)
    assert server.seen == [] and not any(secret in value for value in server.authorizations)
    with LoopbackLLM() as llm:  # the suite's stand-in endpoint, which records every chat request's headers
        with pytest.raises(EndpointError):
            chat(Endpoint(base_url=llm.base_url, model="test-model", api_key_env="SECRET_KEY"), MESSAGES)
    assert llm.chat_calls == 0 and not any(secret in value for headers in llm.headers_seen for value in headers.values())


@pytest.mark.usefixtures("default_keys")
def test_the_page_form_refuses_secret_key_naming_the_setting(project: Project, admin_user: Any, secret: str) -> None:
    with Recorder() as server:
        response = login(admin_user).post(create_url(project), form_post(server.base_url, "SECRET_KEY"))
    assert response.status_code == 400
    assert names_the_setting(response.content.decode())
    assert not Judge.objects.filter(name="probe").exists() and server.seen == []


@pytest.mark.usefixtures("default_keys")
def test_the_api_refuses_secret_key_naming_the_setting(project: Project, admin_user: Any, secret: str) -> None:
    with Recorder() as server:
        response = api_post(login(admin_user), project, server.base_url, "SECRET_KEY")
    assert response.status_code == 400
    assert set(response.json()) == {"api_key_env"} and names_the_setting(response.json()["api_key_env"][0])
    assert not Judge.objects.filter(name="probe").exists() and server.seen == []


@pytest.mark.usefixtures("default_keys")
def test_the_judge_command_is_an_operator_and_may_name_any_variable_but_the_pages_may_not_run_its_judge(
    project: Project, admin_user: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever runs `manage.py judge` holds the server's environment already: the variable is read and sent. The judge
    it stored is held to FAITHLAB_JUDGE_KEYS once it is run from the pages or the API (site staff included)."""
    add_samples(project, 2)
    key = "sk-test-" + secrets.token_hex(8)
    monkeypatch.setenv("OPERATOR_ONLY_KEY", key)  # not in the default list
    with Recorder() as server:
        call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model", "m",
                     "--api-key-env", "OPERATOR_ONLY_KEY", "--quiet", "--json", stdout=io.StringIO(),
                     stderr=io.StringIO())
        judge = Judge.objects.get()
        assert JudgeRun.objects.get().scored == 2
        assert server.authorizations and set(server.authorizations) == {f"Bearer {key}"}
        sent = len(server.seen)
        with pytest.raises(JudgeSettingsError) as refused:
            runs.start_run(project, judge, by=admin_user, queue=False)
        assert refused.value.field == "api_key_env" and names_the_setting(str(refused.value), "OPERATOR_ONLY_KEY")
        response = login(admin_user).post(reverse("judging-run-start", args=[project.slug]),
                                          {"judge": judge.pk, "scope": "all"})
        assert response.status_code == 400 and names_the_setting(response.content.decode(), "OPERATOR_ONLY_KEY")
        assert JudgeRun.objects.count() == 1 and len(server.seen) == sent


def test_a_stored_judge_whose_variable_is_no_longer_allowed_is_refused_at_run_start_and_by_the_worker(
    project: Project, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 2)
    key = "sk-test-" + secrets.token_hex(8)
    monkeypatch.setenv("FAITHLAB_TEST_GONE_KEY", key)
    with Recorder() as server:
        judge = create_judge(project, name="old", kind="rubric", base_url=server.base_url, model="m",
                             api_key_env="FAITHLAB_TEST_GONE_KEY")  # allowed by the suite's FAITHLAB_JUDGE_KEYS
        queued = runs.start_run(project, judge, queue=False)
        settings.FAITHLAB_JUDGE_KEYS = DEFAULT_KEYS  # the operator narrowed the list since
        with pytest.raises(JudgeSettingsError) as refused:
            runs.start_run(project, judge, queue=False)
        assert refused.value.field == "api_key_env" and names_the_setting(str(refused.value), "FAITHLAB_TEST_GONE_KEY")
        executed = runs.execute_run(queued.pk)  # queued before: the worker refuses it itself
    assert executed.status == JudgeRun.Status.FAILED
    assert names_the_setting(executed.error, "FAITHLAB_TEST_GONE_KEY")
    assert server.seen == [] and key not in executed.error


def test_a_synthetic_set_writer_whose_variable_is_not_allowed_is_refused(
    project: Project, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_samples(project, 2)
    monkeypatch.setenv("FAITHLAB_TEST_WRITER_KEY", "sk-test-writer")
    writer = create_judge(project, name="writer", kind="rubric", base_url="http://127.0.0.1:9/v1", model="m",
                          api_key_env="FAITHLAB_TEST_WRITER_KEY")
    settings.FAITHLAB_JUDGE_KEYS = DEFAULT_KEYS
    with pytest.raises(SyntheticSetError) as refused:
        create_synthetic_set(project, name="set", writer=writer, queue=False)
    assert refused.value.field == "api_key_env" and names_the_setting(str(refused.value), "FAITHLAB_TEST_WRITER_KEY")


def test_a_name_at_host_entry_allows_the_variable_for_that_host_only(
    project: Project, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-" + secrets.token_hex(8)
    monkeypatch.setenv("FAITHLAB_LOCAL_KEY", key)
    with Recorder() as allowed, Recorder() as other:
        settings.FAITHLAB_JUDGE_KEYS = (("FAITHLAB_LOCAL_KEY", "127.0.0.1", port_of(allowed.base_url)),)
        chat(Endpoint(base_url=allowed.base_url, model="m", api_key_env="FAITHLAB_LOCAL_KEY", max_retries=0), MESSAGES)
        with pytest.raises(EndpointError) as refused:  # the same host on another port
            chat(Endpoint(base_url=other.base_url, model="m", api_key_env="FAITHLAB_LOCAL_KEY", max_retries=0),
                 MESSAGES)
        assert names_the_setting(str(refused.value), "FAITHLAB_LOCAL_KEY")
        assert create_judge(project, name="here", kind="rubric", base_url=allowed.base_url, model="m",
                            api_key_env="FAITHLAB_LOCAL_KEY").api_key_env == "FAITHLAB_LOCAL_KEY"
        with pytest.raises(JudgeSettingsError) as not_saved:
            create_judge(project, name="there", kind="rubric", base_url=other.base_url, model="m",
                         api_key_env="FAITHLAB_LOCAL_KEY")
        assert not_saved.value.field == "api_key_env"
    assert allowed.authorizations == [f"Bearer {key}"] and other.seen == []
    settings.FAITHLAB_JUDGE_KEYS = (("OPENAI_API_KEY", "api.openai.com", None),)
    with pytest.raises(JudgeSettingsError):
        create_judge(project, name="lookalike", kind="rubric", base_url="https://api.openai.com.example.org/v1",
                     model="m", api_key_env="OPENAI_API_KEY")
    assert create_judge(project, name="openai", kind="rubric", base_url="https://API.openai.com/v1", model="m",
                        api_key_env="OPENAI_API_KEY").api_key_env == "OPENAI_API_KEY"


def test_the_judges_list_tells_set_or_not_set_only_for_allowed_variables(
    project: Project, admin_user: Any, settings: Any, monkeypatch: pytest.MonkeyPatch, secret: str
) -> None:
    monkeypatch.setenv("FAITHLAB_TEST_SET_KEY", "sk-test-set")
    judge = create_judge(project, name="j", kind="rubric", base_url="http://127.0.0.1:9/v1", model="m",
                         api_key_env="FAITHLAB_TEST_SET_KEY")
    page = login(admin_user).get(reverse("judging-judges", args=[project.slug])).content.decode()
    assert 'data-key-set="yes"' in page
    settings.FAITHLAB_JUDGE_KEYS = DEFAULT_KEYS
    Judge.objects.filter(pk=judge.pk).update(api_key_env="SECRET_KEY")  # stored before the list existed
    page = login(admin_user).get(reverse("judging-judges", args=[project.slug])).content.decode()
    assert 'data-key-set="not-allowed"' in page and 'data-key-set="yes"' not in page
    assert 'data-key-set="no"' not in page


# ----------------------------------------------------------------------------- hosts


PRIVATE_URLS = ["http://127.0.0.1:11434/v1", "http://10.0.0.1/v1", "http://169.254.169.254/latest",
                "http://localhost:11434/v1", "http://[::1]:8000/v1", "http://[fd00::5]/v1", "http://0.0.0.0:80/v1"]


@pytest.mark.parametrize("url", PRIVATE_URLS)
def test_a_project_admin_who_is_not_staff_may_not_point_a_judge_at_a_private_host(
    project: Project, pam: Any, url: str
) -> None:
    client = login(pam)
    response = client.post(create_url(project), form_post(url))
    assert response.status_code == 400 and "FAITHLAB_JUDGE_HOSTS" in response.content.decode()
    answer = api_post(client, project, url)
    assert answer.status_code == 400 and set(answer.json()) == {"base_url"}
    assert "FAITHLAB_JUDGE_HOSTS" in answer.json()["base_url"][0] and "public" in answer.json()["base_url"][0]
    assert not Judge.objects.exists()


@pytest.mark.parametrize(("url", "listed"), [
    ("http://127.0.0.1:11434/v1", ("127.0.0.1", None)),
    ("http://10.0.0.1/v1", ("10.0.0.1", 80)),
    ("http://169.254.169.254/latest", ("169.254.169.254", None)),
    ("http://localhost:11434/v1", ("localhost", 11434)),
    ("http://[::1]:8000/v1", ("::1", None)),
])
def test_a_host_listed_in_faithlab_judge_hosts_is_allowed_to_a_project_admin(
    project: Project, pam: Any, settings: Any, url: str, listed: tuple[str, int | None]
) -> None:
    client = login(pam)
    assert client.post(create_url(project), form_post(url)).status_code == 400
    settings.FAITHLAB_JUDGE_HOSTS = (("example.org", None), listed)
    assert client.post(create_url(project), form_post(url)).status_code == 302
    assert api_post(client, project, url).status_code == 400  # the name is taken: the host passed
    assert Judge.objects.get(name="probe").base_url == url


def test_a_listed_host_port_allows_that_port_only(project: Project, pam: Any, settings: Any) -> None:
    settings.FAITHLAB_JUDGE_HOSTS = (("localhost", 11434),)
    answer = api_post(login(pam), project, "http://localhost:8001/v1")
    assert answer.status_code == 400 and "FAITHLAB_JUDGE_HOSTS" in answer.json()["base_url"][0]


def test_site_staff_and_public_hosts_are_allowed(project: Project, pam: Any, admin_user: Any) -> None:
    assert login(pam).post(create_url(project), form_post("http://127.0.0.1:11434/v1")).status_code == 400
    assert login(admin_user).post(create_url(project), form_post("http://127.0.0.1:11434/v1")).status_code == 302
    public = api_post(login(pam), project, "http://93.184.216.34/v1")
    assert public.status_code == 400 and set(public.json()) == {"name"}  # only the name, taken by staff's judge
    superuser = make_user("root", is_superuser=True)
    Membership.objects.create(project=project, user=superuser, role=Membership.Role.ADMIN)
    Judge.objects.all().delete()
    assert api_post(login(superuser), project, "http://169.254.169.254/v1").status_code == 201


def test_a_project_admin_edits_a_staff_judge_keeping_its_local_url_but_cannot_move_it_to_another(
    project: Project, pam: Any, admin_user: Any
) -> None:
    judge = create_judge(project, name="local", kind="rubric", base_url="http://127.0.0.1:11434/v1", model="m",
                         by=admin_user)
    url = reverse("judging-judge-update", args=[project.slug, judge.pk])
    prefix = f"judge-{judge.pk}-"
    fields = {prefix + name.removeprefix("rubric-"): value for name, value in form_post(judge.base_url).items()}
    assert login(pam).post(url, fields | {prefix + "name": "renamed"}).status_code == 302
    judge.refresh_from_db()
    assert judge.name == "renamed"
    moved = login(pam).post(url, fields | {prefix + "base_url": "http://169.254.169.254/v1"})
    assert moved.status_code == 400 and "FAITHLAB_JUDGE_HOSTS" in moved.content.decode()
    judge.refresh_from_db()
    assert judge.base_url == "http://127.0.0.1:11434/v1"


def test_the_judge_command_is_an_operator_and_may_use_any_host(project: Project) -> None:
    add_samples(project, 1)
    with Recorder() as server:  # a project admin could not save this loopback URL; the command may
        call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model", "m", "--quiet",
                     "--json", stdout=io.StringIO(), stderr=io.StringIO())
    assert Judge.objects.get().base_url == server.base_url and server.seen


# ----------------------------------------------------------------------------- redirects


def test_a_redirect_is_not_followed_and_the_failure_names_it(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-" + secrets.token_hex(8)
    monkeypatch.setenv("FAITHLAB_TEST_REDIRECT_KEY", key)
    with Recorder() as target, Recorder(redirect_to=target.base_url) as redirecting:
        endpoint = Endpoint(base_url=redirecting.base_url, model="m", api_key_env="FAITHLAB_TEST_REDIRECT_KEY",
                            max_retries=2)
        for call in (lambda: chat(endpoint, MESSAGES), lambda: check_endpoint(endpoint)):
            with pytest.raises(EndpointError) as failed:
                call()
            assert "HTTP 302" in str(failed.value) and "not followed" in str(failed.value)
            assert failed.value.setting == "base_url"
    assert redirecting.seen and target.seen == []


def test_a_run_against_a_redirecting_endpoint_fails_before_it_starts_and_the_target_gets_nothing(
    project: Project,
) -> None:
    add_samples(project, 2)
    with Recorder() as target, Recorder(redirect_to=target.base_url) as redirecting:
        with pytest.raises(CommandError) as refused:
            call_command("judge", "--project", project.slug, "--base-url", redirecting.base_url, "--model", "m",
                         "--quiet", stdout=io.StringIO(), stderr=io.StringIO())
    assert str(refused.value).startswith("--base-url ") and "not followed" in str(refused.value)
    assert target.seen == []


# ----------------------------------------------------------------------------- the settings


def test_the_settings_read_names_hosts_and_ports_and_refuse_a_bad_entry_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from config.env import SettingError, envhosts, envkeyhosts

    monkeypatch.delenv("FAITHLAB_JUDGE_KEYS", raising=False)
    assert envkeyhosts("FAITHLAB_JUDGE_KEYS", "OPENAI_API_KEY@api.openai.com") == DEFAULT_KEYS
    monkeypatch.setenv("FAITHLAB_JUDGE_KEYS", " VLLM_KEY@Localhost:8001, MY_* ,K@[::1]:80")
    assert envkeyhosts("FAITHLAB_JUDGE_KEYS", "X") == (("VLLM_KEY", "localhost", 8001), ("MY_*", "", None),
                                                      ("K", "::1", 80))
    monkeypatch.setenv("FAITHLAB_JUDGE_HOSTS", "localhost:11434, 10.0.0.5")
    assert envhosts("FAITHLAB_JUDGE_HOSTS") == (("localhost", 11434), ("10.0.0.5", None))
    for bad in ("SECRET KEY", "K@", "K@http://x", "K@host:99999"):
        monkeypatch.setenv("FAITHLAB_JUDGE_KEYS", bad)
        with pytest.raises(SettingError, match="FAITHLAB_JUDGE_KEYS=.*is not NAME or NAME@host"):
            envkeyhosts("FAITHLAB_JUDGE_KEYS", "X")
    monkeypatch.setenv("FAITHLAB_JUDGE_HOSTS", "http://localhost")
    with pytest.raises(SettingError, match="FAITHLAB_JUDGE_HOSTS=.*is not a host or host:port"):
        envhosts("FAITHLAB_JUDGE_HOSTS")


@pytest.mark.usefixtures("default_keys")
def test_by_default_only_the_openai_key_for_openai_is_sent_no_other_variable_to_any_host(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAITHLAB_JUDGE_KEY_TEAM", "sk-team")  # a key an operator meant for judges, with no host rule
    for name, url in (("FAITHLAB_JUDGE_KEY_TEAM", "https://attacker.example/v1"),
                      ("OPENAI_API_KEY", "https://attacker.example/v1")):
        with pytest.raises(JudgeSettingsError) as refused:
            create_judge(project, name=f"probe {name}", kind="rubric", base_url=url, model="m", api_key_env=name)
        assert refused.value.field == "api_key_env" and names_the_setting(str(refused.value), name)
    assert create_judge(project, name="openai", kind="rubric", base_url="https://api.openai.com/v1", model="m",
                        api_key_env="OPENAI_API_KEY").api_key_env == "OPENAI_API_KEY"
