"""An endpoint that answers HTTP 200 with something that is not a chat completion (an HTML page from a web server at
the wrong address, text that is not JSON) is retried as a 5xx is, then becomes a recorded error quoting the body and
naming base_url (this process never had a chat completion from that address), never a crash of the run or of the
`judge` command. A choice without a message is an empty answer, and a structured-output refusal keeps its text as the
raw answer. (Such a body mid-run, after good answers: tests/judging/test_endpoint_error_pages.py.)

The server here is a real HTTP server on loopback that sends raw bodies, which tests/judging/llm_server.py (always a
well-formed completion) cannot.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from annotate.models import Project
from judging.clients import Endpoint, EndpointError, chat, check_endpoint, forget_request_modes
from judging.judges.rubric import RubricRequest, call_rubric_judge
from judging.models import Judge, Judgement, JudgeRun
from judging.prompts import answer_schema
from tests.judging.run_factories import add_samples

MESSAGES = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "Rate this."}]
SCHEMA = answer_schema(True)


def completion(message: Any) -> bytes:
    return json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "test-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }).encode()


# Name -> (body, content type) that the server sends with HTTP 200 to every GET and POST.
BODIES: dict[str, tuple[bytes, str]] = {
    "html": (b"<!doctype html><html><body><h1>Welcome to nginx!</h1></body></html>", "text/html"),
    "not_json": (b"Service is up.", "application/json"),
    "null_message": (completion(None), "application/json"),
    "refusal": (completion({"role": "assistant", "content": None,
                            "refusal": "I cannot help with rating this text."}), "application/json"),
}


class RawServer:
    """Answers every request with HTTP 200 and one fixed body; counts the requests."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the access log
                return

            def _answer(self) -> None:
                server.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._answer()

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(autouse=True)
def fresh_request_modes() -> Iterator[None]:
    forget_request_modes()
    yield
    forget_request_modes()


def _request() -> RubricRequest:
    return RubricRequest(messages=MESSAGES, schema=SCHEMA, model="test-model", temperature=0.0, cache_key="key")


def endpoint(server: RawServer) -> Endpoint:
    return Endpoint(base_url=server.base_url, model="test-model", timeout_seconds=5.0, max_retries=2)


@pytest.mark.parametrize(("kind", "began"), [("html", "it began '<!doctype html><html><body><h1>Welcome to nginx!"),
                                             ("not_json", "it began 'Service is up.'")])
def test_a_200_that_is_not_a_chat_completion_is_retried_then_an_endpoint_error_naming_base_url(
    kind: str, began: str
) -> None:
    with RawServer(*BODIES[kind]) as server:
        with pytest.raises(EndpointError) as caught:
            chat(endpoint(server), MESSAGES, json_schema=SCHEMA)
        sent = server.requests
    assert caught.value.setting == "base_url"
    assert str(caught.value).startswith(f"The endpoint at {server.base_url} answered HTTP 200 with a body that is "
                                        f"not a chat completion ({began}")
    assert "), 3 times; check the judge's “Endpoint (base URL)”" in str(caught.value)
    assert sent == 3 == caught.value.attempts  # retried as a 5xx is (max_retries 2); no response format to blame


@pytest.mark.parametrize("kind", ["html", "not_json"])
def test_a_rubric_call_to_such_an_endpoint_is_recorded_as_an_error_without_a_score(kind: str) -> None:
    with RawServer(*BODIES[kind]) as server:
        outcome = call_rubric_judge(endpoint(server), _request(), with_reasoning=True)
    assert (outcome.status, outcome.score, outcome.raw) == ("error", None, "")
    assert "check the judge's “Endpoint (base URL)”" in outcome.error and "base_url" not in outcome.error


@pytest.mark.parametrize("kind", ["html", "not_json"])
def test_the_endpoint_check_names_base_url_for_such_an_endpoint(kind: str) -> None:
    with RawServer(*BODIES[kind]) as server, pytest.raises(EndpointError) as caught:
        check_endpoint(endpoint(server))
    assert caught.value.setting == "base_url"
    assert "answered HTTP 200 with a body that is not a chat completion (it began '" in str(caught.value)
    assert "3 times in 3 attempts" not in str(caught.value) and "3 times;" in str(caught.value)


def test_a_choice_without_a_message_is_an_empty_answer() -> None:
    with RawServer(*BODIES["null_message"]) as server:
        outcome = call_rubric_judge(endpoint(server), _request(), with_reasoning=True)
    assert (outcome.status, outcome.score, outcome.raw, outcome.error) == (
        "parse_error", None, "", "The answer is empty.")


def test_a_structured_output_refusal_is_kept_as_the_raw_answer() -> None:
    with RawServer(*BODIES["refusal"]) as server:
        outcome = call_rubric_judge(endpoint(server), _request(), with_reasoning=True)
    assert (outcome.status, outcome.score) == ("parse_error", None)
    assert outcome.raw == "I cannot help with rating this text."
    assert outcome.error == "The answer holds no JSON object."


@pytest.mark.django_db
def test_judge_command_pointed_at_a_web_page_names_base_url_and_writes_nothing(project: Project) -> None:
    add_samples(project, 3)
    with RawServer(*BODIES["html"]) as server:
        with pytest.raises(CommandError) as caught:
            call_command("judge", "--project", project.slug, "--base-url", server.base_url, "--model", "test-model",
                         "--json", stdout=io.StringIO())
    assert str(caught.value).startswith(f"--base-url {server.base_url}: ")
    assert "answered HTTP 200 with a body that is not a chat completion (it began '<!doctype html>" in str(
        caught.value)
    assert not Judge.objects.filter(project=project).exists()
    assert not JudgeRun.objects.exists() and not Judgement.objects.exists()
