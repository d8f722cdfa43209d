"""Against a real agentd started with --fake-llm: set AGENTD_URL (and AGENTD_API_KEY if it has
keys) to run these; they are skipped otherwise."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from agentd_client import Agentd, AsyncAgentd, NotFoundError, ValidationError
from agentd_client._generated.api.runs import get_run

URL = os.environ.get("AGENTD_URL", "")
KEY = os.environ.get("AGENTD_API_KEY") or None
pytestmark = pytest.mark.skipif(not URL, reason="AGENTD_URL is not set")


def crew(*, approval: bool = False, agent: str = "researcher") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "research",
        "agents": [{"name": "researcher", "role": "Senior researcher", "goal": "Find facts about {topic}",
                    "backstory": "Curious and precise.", "llm": "openai/gpt-4o-mini",
                    "tools": ["calculator"]}],
        "tasks": [{"name": "facts", "description": "Research {topic}", "expected_output": "Three bullets",
                   "agent": agent}],
    }
    if approval:
        spec["requires_approval"] = ["calculator"]
    return spec


@pytest.fixture
def client() -> Any:
    with Agentd(URL, api_key=KEY) as agentd:
        yield agentd


def test_kickoff_and_wait_completes(client: Agentd) -> None:
    run = client.kickoff_and_wait(crew(), {"topic": "tides"}, timeout=120)
    assert run.status.value == "completed"
    assert run.usage.tool_calls == 1
    assert client.get_run(run.id).status.value == "completed"
    # The generated layer works through the same connection.
    generated = get_run.sync(run.id, client=client.api)
    assert generated is not None and getattr(generated, "id") == run.id


def test_the_same_idempotency_key_answers_the_same_run(client: Agentd) -> None:
    key = f"py-{uuid.uuid4()}"
    first = client.kickoff(crew(), {"topic": "tides"}, idempotency_key=key)
    again = client.kickoff(crew(), {"topic": "tides"}, idempotency_key=key)
    assert first.id == again.id
    client.wait(first.id, timeout=120)


def test_events_are_dense_and_end_with_run_completed(client: Agentd) -> None:
    run = client.kickoff(crew(), {"topic": "tides"})
    events = list(client.events(run.id))
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert events[0].type == "run.queued" and events[-1].type == "run.completed"
    assert {"tool.started", "tool.finished"} <= {e.type for e in events}
    # Resuming from the middle gives exactly the rest.
    middle = len(events) // 2
    assert [e.seq for e in client.events(run.id, after=middle)] == list(range(middle + 1, len(events) + 1))
    # After the last event there is nothing (204).
    assert list(client.events(run.id, after=len(events))) == []


def test_a_crew_with_an_unknown_agent_is_a_validation_error(client: Agentd) -> None:
    with pytest.raises(ValidationError) as raised:
        client.kickoff(crew(agent="ghost"), {"topic": "tides"})
    assert raised.value.status == 422
    assert raised.value.type == "/problems/validation"
    assert "crew.tasks[0].agent" in [e.field for e in raised.value.errors]


def test_an_unknown_run_is_not_found(client: Agentd) -> None:
    with pytest.raises(NotFoundError):
        client.get_run(uuid.uuid4())


def test_a_tool_call_awaits_approval_and_runs_once_approved(client: Agentd) -> None:
    run = client.kickoff(crew(approval=True), {"topic": "tides"})
    with closing(client.events(run.id)) as events:
        requested = next(e for e in events if e.type == "tool.approval_requested")
    assert requested.data["tool"] == "calculator"
    assert client.wait(run.id, timeout=60).status.value == "awaiting_input"
    client.approve_tool_call(run.id, requested.data["tool_call_id"])  # holds '#' and '/'
    finished = client.wait(run.id, timeout=120)
    assert finished.status.value == "completed"
    types = [e.type for e in client.events(run.id)]
    assert "tool.approved" in types and types[-1] == "run.completed"


def test_cancel_a_run_awaiting_approval(client: Agentd) -> None:
    run = client.kickoff(crew(approval=True), {"topic": "tides"})
    client.wait(run.id, timeout=60)
    client.cancel(run.id)
    assert client.wait(run.id, timeout=60).status.value == "cancelled"


def test_the_async_client() -> None:
    async def scenario() -> tuple[str, list[int]]:
        async with AsyncAgentd(URL, api_key=KEY) as client:
            run = await client.kickoff_and_wait(crew(), {"topic": "tides"}, timeout=120)
            seqs = [e.seq async for e in client.events(run.id) if e.seq is not None]
            return run.status.value, seqs

    status, seqs = asyncio.run(scenario())
    assert status == "completed"
    assert seqs == list(range(1, len(seqs) + 1))


def driver(*args: str) -> list[dict[str, Any]]:
    command = [sys.executable, str(Path(__file__).with_name("driver.py")), "--url", URL]
    if KEY:
        command += ["--key", KEY]
    done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_the_driver_against_the_server() -> None:
    lines = driver("kickoff-and-wait", json.dumps({"crew": crew(), "inputs": {"topic": "tides"}}))
    assert list(lines[0]) == ["kicked"] and lines[1]["run"]["status"] == "completed"
    run_id = lines[0]["kicked"]["id"]
    followed = driver("follow", run_id)
    assert followed[-1] == {"done": "run.completed"}
    assert [line["event"]["seq"] for line in followed[:-1]] == list(range(1, len(followed)))
    problem = driver("problem")[0]["problem"]
    assert problem["kind"] == "ValidationError" and problem["status"] == 422
    assert any(e["field"] == "crew.tasks[0].agent" for e in problem["errors"])

    run = driver("kickoff-and-wait", json.dumps(
        {"crew": crew(approval=True), "inputs": {"topic": "tides"}}))[1]["run"]
    assert run["status"] == "awaiting_input"
    approved = driver("approve", run["id"])
    assert [list(line)[0] for line in approved] == ["approval_requested", "approved", "run"]
    assert approved[-1]["run"]["status"] == "completed"
