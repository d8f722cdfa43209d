"""Following a run's events: parsing, deltas, resumption after drops, errors."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from stub import HANG_UP, Recorded, Reply, StubServer, envelope, json_reply, problem, sse_event, sse_reply

from agentd_client import (
    Agentd,
    AgentdConnectionError,
    AsyncAgentd,
    Event,
    NotFoundError,
    ReconnectPolicy,
    StreamClosedError,
)

TYPES = ["run.queued", "run.started", "task.started", "task.completed", "run.completed"]
FAST = ReconnectPolicy(initial_delay=0.01, max_delay=0.05)


def events_from(after: int, upto: int = len(TYPES)) -> list[bytes]:
    return [sse_event(seq, TYPES[seq - 1]) for seq in range(after + 1, upto + 1)]


def replay(request: Recorded, upto: int = len(TYPES)) -> Reply:
    """What agentd answers: the events after the request's Last-Event-ID, up to ``upto``."""
    after = int(request.headers.get("last-event-id", "0"))
    return sse_reply(events_from(after, upto))


def follow(url: str, **kwargs: object) -> list[Event]:
    with Agentd(url, reconnect=FAST) as client:
        return list(client.events("r1", **kwargs))  # type: ignore[arg-type]


def test_a_whole_stream_with_keep_alives_retry_and_deltas() -> None:
    delta = b"event: llm.delta\ndata: " + json.dumps(envelope(None, "llm.delta", {"text": "Ti"})).encode() + b"\n\n"
    pieces = [b"retry: 3000\n\n", b": keep-alive\n\n", *events_from(0, 3), delta, *events_from(3)]
    with StubServer([sse_reply(pieces)]) as stub:
        events = follow(stub.url)
        with_deltas = follow(stub.url, include_deltas=True)
    assert [e.type for e in events] == TYPES
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert events[-1].is_terminal and events[0].run_id == "r1"
    assert [e.type for e in with_deltas] == TYPES[:3] + ["llm.delta"] + TYPES[3:]
    assert with_deltas[3].seq is None and with_deltas[3].data == {"text": "Ti"}
    request = stub.requests[0]
    assert request.path == "/v1/runs/r1/events"
    assert request.headers["accept"] == "text/event-stream"
    assert "last-event-id" not in request.headers


def test_multi_line_data_is_one_envelope() -> None:
    document = json.dumps(envelope(1, "run.completed"), indent=1).replace("\n", "\ndata: ")
    with StubServer([sse_reply([f"id: 1\nevent: run.completed\ndata: {document}\n\n".encode()])]) as stub:
        events = follow(stub.url)
    assert [e.seq for e in events] == [1]


def test_a_dropped_stream_resumes_after_the_last_event_without_repeats() -> None:
    def script(request: Recorded) -> Reply:
        if len(stub.requests) == 1:  # drop after event 2, half-way through event 3
            return sse_reply([b"retry: 200\n\n", *events_from(0, 2), sse_event(3, TYPES[2])[:20]])
        # The server replays from one event earlier than asked: the client must not repeat it.
        return sse_reply(events_from(int(request.headers["last-event-id"]) - 1))

    resumed: list[str | None] = []
    with StubServer(script) as stub:
        with Agentd(stub.url, reconnect=FAST) as client:
            events = list(client.events("r1", on_reconnect=resumed.append))
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert stub.requests[1].headers["last-event-id"] == "2"
    assert resumed == ["2"]
    assert stub.requests[1].at - stub.requests[0].at >= 0.2  # the server's retry: 200


def test_reconnects_through_resets_and_5xx_answers() -> None:
    def script(request: Recorded) -> Reply | None:
        number = len(stub.requests)
        if number == 1:
            return sse_reply(events_from(0, 1))
        if number == 2:
            return HANG_UP
        if number == 3:
            return json_reply(503, problem(503, "unavailable", "db away"), {"Retry-After": "0"})
        if number == 4:
            return json_reply(502, {"detail": "bad gateway"})
        return replay(request)

    resumed: list[str | None] = []
    with StubServer(script) as stub:
        with Agentd(stub.url, reconnect=FAST) as client:
            events = list(client.events("r1", on_reconnect=resumed.append))
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert [r.headers.get("last-event-id") for r in stub.requests] == [None, "1", "1", "1", "1"]
    assert resumed == ["1"]


def test_a_refused_connection_is_survived_until_the_server_is_back() -> None:
    first = StubServer([sse_reply(events_from(0, 2))])
    port = first.port
    restarted: list[StubServer] = []

    def restart() -> None:
        time.sleep(0.5)
        server = StubServer(lambda request: replay(request), port=port)
        restarted.append(server.__enter__())

    with first:
        thread = threading.Thread(target=restart)
        thread.start()
        with Agentd(first.url, reconnect=ReconnectPolicy(initial_delay=0.05, max_delay=0.1)) as client:
            events = client.events("r1")
            seqs = [next(events).seq, next(events).seq]
            first.stop()
            seqs += [e.seq for e in events]
    thread.join()
    restarted[0].stop()
    assert seqs == [1, 2, 3, 4, 5]
    assert [r.headers.get("last-event-id") for r in restarted[0].requests] == ["2"]


def test_after_resumes_from_a_given_seq() -> None:
    with StubServer(lambda request: replay(request)) as stub:
        events = follow(stub.url, after=3)
    assert [e.seq for e in events] == [4, 5]
    assert stub.requests[0].headers["last-event-id"] == "3"


def test_no_content_ends_the_iteration() -> None:
    with StubServer([Reply(204)]) as stub:
        assert follow(stub.url, after=9) == []


def test_stream_closed_is_raised() -> None:
    closed = b'event: stream.closed\ndata: {"type": "stream.closed", "reason": "key_revoked", "detail": "the key was revoked"}\n\n'
    with StubServer([sse_reply([*events_from(0, 2), closed])]) as stub:
        with Agentd(stub.url, reconnect=FAST) as client:
            seen = []
            with pytest.raises(StreamClosedError) as raised:
                for event in client.events("r1"):
                    seen.append(event.seq)
    assert seen == [1, 2]
    assert raised.value.reason == "key_revoked"
    assert len(stub.requests) == 1


def test_a_client_error_is_raised_without_reconnecting() -> None:
    with StubServer([json_reply(404, problem(404, "not-found", "no run r1"))]) as stub:
        with pytest.raises(NotFoundError):
            follow(stub.url)
    assert len(stub.requests) == 1


def test_reconnect_attempts_are_bounded() -> None:
    with StubServer([HANG_UP]) as stub:
        with Agentd(stub.url, reconnect=ReconnectPolicy(max_attempts=3, initial_delay=0.01)) as client:
            with pytest.raises(AgentdConnectionError, match="4 failed connections"):
                list(client.events("r1"))
    assert len(stub.requests) == 4


def test_the_count_of_failures_starts_again_after_progress() -> None:
    def script(request: Recorded) -> Reply:
        after = int(request.headers.get("last-event-id", "0"))
        return sse_reply(events_from(after, after + 1))  # one event per connection

    with StubServer(script) as stub:
        with Agentd(stub.url, reconnect=ReconnectPolicy(max_attempts=1, initial_delay=0.01)) as client:
            assert [e.seq for e in client.events("r1")] == [1, 2, 3, 4, 5]


def test_async_events_resume_exactly() -> None:
    def script(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return sse_reply(events_from(0, 3))
        return replay(request)

    async def collect(url: str, resumed: list[str | None]) -> list[Event]:
        async with AsyncAgentd(url, reconnect=FAST) as client:
            return [e async for e in client.events("r1", on_reconnect=resumed.append)]

    resumed: list[str | None] = []
    with StubServer(script) as stub:
        events = asyncio.run(collect(stub.url, resumed))
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert resumed == ["3"]
    assert stub.requests[1].headers["last-event-id"] == "3"
