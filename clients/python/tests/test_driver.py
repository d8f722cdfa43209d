"""The driver script's protocol, against the stub server (no agentd needed)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from standardwebhooks.webhooks import Webhook
from stub import Recorded, Reply, StubServer, json_reply, problem, sse_event, sse_reply

DRIVER = Path(__file__).with_name("driver.py")
TYPES = ["run.queued", "run.started", "run.completed"]


def drive(*args: str, stdin: str = "") -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        [sys.executable, str(DRIVER), *args], input=stdin, capture_output=True, text=True,
        timeout=60, check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


def test_verify_webhook_prints_the_payload_or_why_it_was_rejected() -> None:
    secret = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    body = json.dumps({"seq": 1, "type": "run.completed"})
    now = datetime.now(tz=timezone.utc)
    headers = {"webhook-id": "msg_9", "webhook-timestamp": str(int(now.timestamp())),
               "webhook-signature": Webhook(secret).sign("msg_9", now, body)}
    code, lines, _ = drive("--url", "http://127.0.0.1:9", "verify-webhook", secret,
                           stdin=json.dumps({"headers": headers, "body": body}))
    assert (code, lines) == (0, [{"verified": {"seq": 1, "type": "run.completed"}}])
    code, lines, _ = drive("--url", "http://127.0.0.1:9", "verify-webhook", secret,
                           stdin=json.dumps({"headers": headers, "body": body + " "}))
    assert code == 0 and list(lines[0]) == ["rejected"]


def test_follow_prints_events_resumptions_and_the_end() -> None:
    def script(request: Recorded) -> Reply:
        after = int(request.headers.get("last-event-id", "0"))
        upto = 2 if after == 0 else 3
        return sse_reply([b"retry: 10\n\n"] + [sse_event(s, TYPES[s - 1]) for s in range(after + 1, upto + 1)])

    with StubServer(script) as stub:
        code, lines, stderr = drive("--url", stub.url, "--key", "agd_k", "follow", "r1")
    assert code == 0, stderr
    assert [list(line)[0] for line in lines] == ["event", "event", "resumed", "event", "done"]
    assert [line["event"]["seq"] for line in lines if "event" in line] == [1, 2, 3]
    assert lines[2] == {"resumed": {"last_event_id": "2"}}
    assert lines[-1] == {"done": "run.completed"}
    assert stub.requests[0].headers["authorization"] == "Bearer agd_k"


def test_problem_prints_the_typed_error() -> None:
    document = problem(422, "validation", "crew.tasks[0].agent: unknown agent 'ghost'",
                       errors=[{"field": "crew.tasks[0].agent", "message": "unknown agent 'ghost'"}])
    with StubServer([json_reply(422, document)]) as stub:
        code, lines, _ = drive("--url", stub.url, "problem")
    assert code == 0
    assert lines == [{"problem": {"kind": "ValidationError", **document}}]
    assert stub.requests[0].json()["crew"]["tasks"][0]["agent"] == "ghost"


def test_a_failure_exits_non_zero_with_a_message() -> None:
    with StubServer([json_reply(404, problem(404, "not-found", "no run r1"))]) as stub:
        code, lines, stderr = drive("--url", stub.url, "follow", "r1")
    assert code != 0 and lines == []
    assert "NotFoundError" in stderr
