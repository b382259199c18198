"""A real OpenAI-compatible HTTP server on loopback that stands in for an LLM endpoint in tests and benchmarks.

It answers `POST /v1/chat/completions` and `GET /v1/models`. What it answers is
decided by `script`, a function of the parsed request body returning a `Reply`;
the default reply scores every request 5 with a short reasoning. Every request
is recorded (`server.requests`) so tests can count calls and read what the
client sent (response_format, messages, headers).

Usage:
    with LoopbackLLM(script=my_script, delay=0.5) as server:
        server.base_url  # "http://127.0.0.1:PORT/v1"
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One answer of the fake endpoint: a chat completion with `content`, or an HTTP error."""

    content: str | None = '{"reasoning": "Every statement is supported by the source.", "score": 5}'
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error_body: dict[str, Any] | None = None
    sleep: float = 0.0  # seconds to wait before answering (longer than the client's timeout = a timeout)
    # Seconds between the bytes of the body (headers go at once): a server that trickles, so no single wait for a
    # byte is ever long; 0 sends the body in one write.
    trickle: float = 0.0
    prompt_tokens: int | None = 120
    completion_tokens: int | None = 30
    # A body sent as it is, with `status` and `content_type`, instead of a completion (a proxy's HTML error page).
    body: str | None = None
    content_type: str = "text/html"


Script = Callable[[dict[str, Any], int], Reply]


def user_text(body: dict[str, Any]) -> str:
    """The user message of a chat request (where the hypothesis and the reference are)."""
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user")


def _default_script(body: dict[str, Any], attempt: int) -> Reply:
    return Reply()


class InFlight:
    """A script that holds every answer ``seconds`` and counts the most calls the server had in flight at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.most = 0
        self._now = 0
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any], attempt: int) -> Reply:
        with self._lock:
            self._now += 1
            self.most = max(self.most, self._now)
        time.sleep(self.seconds)
        with self._lock:
            self._now -= 1
        return Reply()

    @property
    def now(self) -> int:
        """Calls in flight at the server now."""
        with self._lock:
            return self._now


class LoopbackLLM:
    """A threaded HTTP server on 127.0.0.1 with a scripted OpenAI-compatible chat endpoint."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        delay: float = 0.0,
        models: tuple[str, ...] = ("test-model",),
        reject_response_formats: tuple[str, ...] = (),
        listed: tuple[str, ...] | None = None,
    ) -> None:
        self.script = script or _default_script
        self.delay = delay
        self.models = models
        # The models GET /models lists (default: those it serves); a proxy may route models it does not list.
        self.listed = models if listed is None else listed
        # Response formats this server refuses with 400, as endpoints without structured output do.
        self.reject_response_formats = reject_response_formats
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.arrivals: list[float] = []  # time.monotonic() when each chat request arrived, beside `requests`
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits up to one interval, and tests start a server each.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def chat_calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> LoopbackLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes; with Nagle on, the client's delayed ACK adds ~40 ms a call.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence the access log
                return

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None,
                      trickle: float = 0.0) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    if not trickle:
                        self.wfile.write(data)
                        return
                    self.wfile.flush()
                    for index in range(len(data)):
                        time.sleep(trickle)
                        self.wfile.write(data[index:index + 1])
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": name, "object": "model", "created": 0, "owned_by": "loopback"} for name in server.listed
                    ]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if len(raw) < length:  # the client went away mid-request (a worker killed): no request to record
                    return
                body = json.loads(raw or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                    return
                key = json.dumps(body.get("messages"), sort_keys=True)
                with server._lock:
                    server.requests.append(body)
                    server.headers_seen.append(dict(self.headers.items()))
                    server.arrivals.append(time.monotonic())
                    attempt = server._attempts.get(key, 0)
                    server._attempts[key] = attempt + 1
                if body.get("model") not in server.models:
                    self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist",
                                               "type": "invalid_request_error", "code": "model_not_found"}})
                    return
                response_format = (body.get("response_format") or {}).get("type")
                if response_format in server.reject_response_formats:
                    self._send(400, {"error": {"message": f"response_format {response_format} is not supported",
                                               "type": "invalid_request_error", "param": "response_format"}})
                    return
                reply = server.script(body, attempt)
                wait = server.delay + reply.sleep
                if wait:
                    time.sleep(wait)
                if reply.body is not None:
                    data = reply.body.encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                if reply.status != 200:
                    self._send(reply.status, reply.error_body or {"error": {"message": f"scripted {reply.status}",
                                                                             "type": "server_error"}},
                               reply.headers)
                    return
                usage = None
                if reply.prompt_tokens is not None and reply.completion_tokens is not None:
                    usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                             "total_tokens": reply.prompt_tokens + reply.completion_tokens}
                self._send(200, {
                    "id": f"chatcmpl-{len(server.requests)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply.content}}],
                    "usage": usage,
                }, reply.headers, reply.trickle)

        return Handler
