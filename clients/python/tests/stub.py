"""A scripted HTTP server on 127.0.0.1 for the unit tests.

Each request is recorded and answered by the next reply of the script (the last one repeats):
a :class:`Reply` (status, headers, body sent whole or piece by piece, then the connection is
closed) or :data:`HANG_UP` (the connection closes without an answer).
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Recorded:
    """A request the stub received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """An answer: ``body`` bytes are sent with a Content-Length; a sequence of pieces is sent
    without one, each flushed after ``pause`` seconds, and the connection closed after them."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | Sequence[bytes] = b""
    pause: float = 0.0


HANG_UP = None
Script = Callable[[Recorded], "Reply | None"]


def json_reply(status: int, document: Any, headers: dict[str, str] | None = None) -> Reply:
    content_type = "application/problem+json" if status >= 400 else "application/json"
    return Reply(
        status, {"Content-Type": content_type, **(headers or {})}, json.dumps(document).encode()
    )


def problem(status: int, slug: str, detail: str, **extra: Any) -> dict[str, Any]:
    titles = {400: "Bad Request", 404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity",
              429: "Too Many Requests", 503: "Service Unavailable"}
    return {"type": f"/problems/{slug}", "title": titles.get(status, "Error"), "status": status,
            "detail": detail, **extra}


def run_document(status: str = "queued", run_id: str | None = None) -> dict[str, Any]:
    """A run as the server answers it (the required members)."""
    run_id = run_id or str(uuid.uuid4())
    return {
        "id": run_id, "tenant": "default", "status": status, "crew_name": "research",
        "inputs": {"topic": "tides"}, "metadata": {}, "created_at": "2026-01-02T03:04:05.123456Z",
        "attempt": 0, "tasks": [], "fake_llm": True,
        "usage": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "tool_calls": 0},
        "links": {"self": f"/v1/runs/{run_id}", "events": f"/v1/runs/{run_id}/events"},
    }


def envelope(seq: int | None, type_: str, data: dict[str, Any] | None = None,
             run_id: str = "r1") -> dict[str, Any]:
    document: dict[str, Any] = {"run_id": run_id, "type": type_, "at": "2026-01-02T03:04:05Z",
                                "task": None, "agent": None, "data": data or {}}
    if seq is not None:
        document["seq"] = seq
    return document


def sse_event(seq: int, type_: str, data: dict[str, Any] | None = None) -> bytes:
    """One event as agentd sends it: id, event and data lines."""
    return (f"id: {seq}\nevent: {type_}\ndata: {json.dumps(envelope(seq, type_, data))}\n\n").encode()


def sse_reply(pieces: Iterable[bytes], pause: float = 0.0) -> Reply:
    return Reply(200, {"Content-Type": "text/event-stream"}, list(pieces), pause)


class StubServer:
    """The server; use it as a context manager. ``script`` answers each request."""

    def __init__(self, script: Script | Sequence[Reply | None], port: int = 0) -> None:
        self.requests: list[Recorded] = []
        if callable(script):
            self._script: Script = script
        else:
            replies = list(script)
            self._script = lambda _req: replies[min(len(self.requests), len(replies)) - 1]
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                url = urlsplit(self.path)
                recorded = Recorded(
                    self.command, url.path, parse_qs(url.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    self.rfile.read(length), time.monotonic(),
                )
                stub.requests.append(recorded)
                reply = stub._script(recorded)
                if reply is None:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if isinstance(reply.body, bytes):
                    self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Connection", "close")
                self.end_headers()
                pieces = [reply.body] if isinstance(reply.body, bytes) else reply.body
                for piece in pieces:
                    time.sleep(reply.pause)
                    self.wfile.write(piece)
                    self.wfile.flush()
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def __enter__(self) -> StubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
