"""Retries on 429 and 503 (honouring Retry-After), idempotency keys, connection errors."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
from stub import HANG_UP, Reply, StubServer, json_reply, problem, run_document

from agentd_client import (
    Agentd,
    AgentdConnectionError,
    AsyncAgentd,
    RateLimitedError,
    RetryPolicy,
    UnavailableError,
)

CREW = {"name": "research", "agents": [], "tasks": []}
FAST = RetryPolicy(backoff_initial=0.01, backoff_max=0.02)


def rate_limited(retry_after: str) -> Reply:
    return json_reply(429, problem(429, "quota", "over the quota"), {"Retry-After": retry_after})


def unavailable(retry_after: str) -> Reply:
    return json_reply(503, problem(503, "unavailable", "database away"), {"Retry-After": retry_after})


def test_kickoff_honours_retry_after_and_keeps_its_idempotency_key() -> None:
    run = run_document()
    with StubServer([rate_limited("1"), unavailable("1"), json_reply(202, run)]) as stub:
        with Agentd(stub.url) as client:
            answered = client.kickoff(CREW, {"topic": "tides"})
    assert str(answered.id) == run["id"]
    assert len(stub.requests) == 3
    keys = {r.headers["idempotency-key"] for r in stub.requests}
    assert len(keys) == 1
    uuid.UUID(keys.pop())  # generated: a UUID
    for before, after in zip(stub.requests, stub.requests[1:]):
        assert after.at - before.at >= 0.95
    assert stub.requests[0].json() == {"crew": CREW, "inputs": {"topic": "tides"}}


def test_a_given_idempotency_key_is_sent_and_each_call_gets_its_own_otherwise() -> None:
    with StubServer([json_reply(202, run_document())]) as stub:
        with Agentd(stub.url) as client:
            client.kickoff("research", idempotency_key="order-17")
            client.kickoff("research")
            client.kickoff("research")
    keys = [r.headers["idempotency-key"] for r in stub.requests]
    assert keys[0] == "order-17"
    assert len(set(keys)) == 3


def test_attempts_are_bounded_and_the_last_answer_is_raised() -> None:
    with StubServer([rate_limited("0")]) as stub:
        with Agentd(stub.url, retry=RetryPolicy(max_attempts=3)) as client:
            with pytest.raises(RateLimitedError) as raised:
                client.get_run(uuid.uuid4())
    assert len(stub.requests) == 3
    assert raised.value.retry_after == 0
    assert raised.value.status == 429


def test_a_retry_after_over_the_cap_is_raised_at_once() -> None:
    with StubServer([unavailable("3600")]) as stub:
        with Agentd(stub.url, retry=RetryPolicy(max_retry_after=10)) as client:
            with pytest.raises(UnavailableError) as raised:
                client.get_run(uuid.uuid4())
    assert len(stub.requests) == 1
    assert raised.value.retry_after == 3600


def test_a_503_without_retry_after_is_retried_with_backoff() -> None:
    with StubServer([json_reply(503, problem(503, "unavailable", "x")), json_reply(200, run_document())]) as stub:
        with Agentd(stub.url, retry=FAST) as client:
            client.get_run(uuid.uuid4())
    assert len(stub.requests) == 2


def test_connection_errors_are_retried_for_gets_and_keyed_kickoffs() -> None:
    with StubServer([HANG_UP, json_reply(200, run_document())]) as stub:
        with Agentd(stub.url, retry=FAST) as client:
            client.get_run(uuid.uuid4())
    assert len(stub.requests) == 2
    with StubServer([HANG_UP, HANG_UP, json_reply(202, run_document())]) as stub:
        with Agentd(stub.url, retry=FAST) as client:
            client.kickoff("research")
    assert len({r.headers["idempotency-key"] for r in stub.requests}) == 1
    assert len(stub.requests) == 3


def test_connection_errors_are_not_retried_for_a_post_without_a_key() -> None:
    with StubServer([HANG_UP, json_reply(202, run_document())]) as stub:
        with Agentd(stub.url, retry=FAST) as client:
            with pytest.raises(AgentdConnectionError):
                client.cancel(uuid.uuid4())
    assert len(stub.requests) == 1


def test_the_generated_layer_shares_the_retries_and_the_key() -> None:
    from agentd_client._generated.api.runs import get_run

    run = run_document()
    with StubServer([unavailable("0"), json_reply(200, run)]) as stub:
        with Agentd(stub.url, api_key="agd_secret") as client:
            answered = get_run.sync(uuid.UUID(run["id"]), client=client.api)
    assert answered is not None and str(getattr(answered, "id")) == run["id"]
    assert [r.headers["authorization"] for r in stub.requests] == ["Bearer agd_secret"] * 2


def test_retries_are_logged_without_the_key(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with StubServer([unavailable("0"), json_reply(200, run_document())]) as stub:
        with Agentd(stub.url, api_key="agd_topsecret") as client:
            client.get_run(uuid.uuid4())
    assert "retrying" in caplog.text
    assert "agd_topsecret" not in caplog.text


def test_async_kickoff_retries_with_the_same_key() -> None:
    async def kick(url: str) -> None:
        async with AsyncAgentd(url) as client:
            await client.kickoff("research", {"topic": "tides"})

    with StubServer([rate_limited("1"), json_reply(202, run_document())]) as stub:
        asyncio.run(kick(stub.url))
    assert len(stub.requests) == 2
    assert stub.requests[1].at - stub.requests[0].at >= 0.95
    assert len({r.headers["idempotency-key"] for r in stub.requests}) == 1
