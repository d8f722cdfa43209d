"""The client's requests: waiting, approvals, cancelling, batches."""

from __future__ import annotations

import uuid

import pytest
from stub import Recorded, Reply, StubServer, json_reply, run_document

from agentd_client import Agentd, WaitTimeoutError


def test_wait_polls_until_the_run_stops() -> None:
    statuses = iter(["running", "running", "awaiting_input"])

    def script(request: Recorded) -> Reply:
        return json_reply(200, run_document(next(statuses)))

    with StubServer(script) as stub:
        with Agentd(stub.url) as client:
            run = client.wait("r1", timeout=120)
    assert run.status.value == "awaiting_input"
    assert [r.path for r in stub.requests] == ["/v1/runs/r1/wait"] * 3
    assert all(0 < int(r.query["timeout_s"][0]) <= 120 for r in stub.requests)


def test_wait_gives_up_when_the_time_is_up() -> None:
    with StubServer([json_reply(200, run_document("running"))]) as stub:
        with Agentd(stub.url) as client:
            with pytest.raises(WaitTimeoutError) as raised:
                client.wait("r1", timeout=0)
    assert raised.value.run.status.value == "running"
    assert stub.requests[0].query["timeout_s"] == ["0"]


def test_kickoff_and_wait_reports_the_key_it_used() -> None:
    run = run_document("queued")

    def script(request: Recorded) -> Reply:
        if request.path == "/v1/kickoffs":
            return json_reply(202, run)
        return json_reply(200, {**run, "status": "completed"})

    kicked: list[tuple[str, str]] = []
    with StubServer(script) as stub:
        with Agentd(stub.url) as client:
            final = client.kickoff_and_wait(
                "research", {"topic": "tides"}, timeout_s=60,
                on_kickoff=lambda r, key: kicked.append((str(r.id), key)),
            )
    assert final.status.value == "completed"
    assert kicked == [(run["id"], stub.requests[0].headers["idempotency-key"])]
    assert stub.requests[0].json() == {"crew": "research", "inputs": {"topic": "tides"}, "timeout_s": 60}
    assert stub.requests[1].path == f"/v1/runs/{run['id']}/wait"


def test_approve_percent_encodes_the_call_id_and_sends_the_decision() -> None:
    with StubServer([json_reply(200, run_document("queued"))]) as stub:
        with Agentd(stub.url) as client:
            client.approve_tool_call("r1", "facts#1/call_1")
            client.approve_tool_call("r1", "facts#1/call_2", approve=False, reason="freeze")
            client.approve_tool_call("r1", "facts#1/call_3", arguments={"expression": "1+1"})
    assert stub.requests[0].path == "/v1/runs/r1/tool-calls/facts%231%2Fcall_1/approval"
    assert [r.json() for r in stub.requests] == [
        {"approve": True},
        {"approve": False, "reason": "freeze"},
        {"approve": True, "arguments": {"expression": "1+1"}},
    ]


def test_cancel_and_batch() -> None:
    run = run_document("cancelled")

    def script(request: Recorded) -> Reply:
        if request.path == "/v1/kickoffs/batch":
            return json_reply(202, {"runs": [run_document(), run_document()]})
        return json_reply(202, run)

    with StubServer(script) as stub:
        with Agentd(stub.url) as client:
            assert client.cancel(uuid.UUID(run["id"])).status.value == "cancelled"
            runs = client.kickoff_batch("research", [{"topic": "a"}, {"topic": "b"}])
    assert stub.requests[0].method == "POST" and stub.requests[0].path == f"/v1/runs/{run['id']}/cancel"
    assert len(runs) == 2
    assert stub.requests[1].json() == {"crew": "research", "inputs": [{"topic": "a"}, {"topic": "b"}]}
    assert "idempotency-key" in stub.requests[1].headers
