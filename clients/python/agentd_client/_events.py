"""Following a run's events over SSE, with exact resumption after a dropped connection.

The I/O-free part lives here (:class:`EventFollower`); the sync and async clients drive it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import AgentdConnectionError, AgentdError, StreamClosedError
from ._sse import SSEDecoder

__all__ = ["TERMINAL_EVENT_TYPES", "Event", "EventFollower", "ReconnectPolicy"]

TERMINAL_EVENT_TYPES = frozenset({"run.completed", "run.failed", "run.cancelled"})
"""The event types that end a run, and with them its event stream."""

ReconnectHook = Callable[[str | None], None]
"""Called each time an event stream resumes after a reconnection, with the ``Last-Event-ID`` it
resumed after (``None`` when no event had been received: the stream started again from the
beginning)."""


@dataclass(frozen=True)
class Event:
    """One event of a run, as the envelope ``{seq, run_id, type, at, task, agent, data}``.

    Attributes:
        type: the event type (``task.started``, ``run.completed``, ``llm.delta``, ...).
        seq: its place in the run's log, dense from 1; ``None`` for ``llm.delta``, which is live
            only and never journaled.
        run_id: the run's id.
        at: when it happened (RFC 3339).
        task: the task it concerns, if any.
        agent: the agent it concerns, if any.
        data: the type's data (see ``EventData`` in the OpenAPI document).
        envelope: the whole envelope, as the server sent it.
    """

    type: str
    seq: int | None
    run_id: str
    at: str
    task: str | None
    agent: str | None
    data: dict[str, Any]
    envelope: dict[str, Any]

    @classmethod
    def from_envelope(cls, envelope: Mapping[str, Any]) -> Event:
        """Read an envelope (as JSON-decoded)."""
        seq = envelope.get("seq")
        data = envelope.get("data")
        return cls(
            type=str(envelope["type"]),
            seq=seq if isinstance(seq, int) else None,
            run_id=str(envelope.get("run_id", "")),
            at=str(envelope.get("at", "")),
            task=envelope.get("task"),
            agent=envelope.get("agent"),
            data=dict(data) if isinstance(data, Mapping) else {},
            envelope=dict(envelope),
        )

    @property
    def is_terminal(self) -> bool:
        """Whether the event ends the run."""
        return self.type in TERMINAL_EVENT_TYPES


@dataclass(frozen=True)
class ReconnectPolicy:
    """How an event stream reconnects after its connection drops.

    The n-th consecutive failed attempt waits ``base * 2**(n-1)`` seconds, at most
    ``max_delay`` (or ``base`` when that is longer), where ``base`` is the reconnection time the server last sent (``retry:``, in
    milliseconds; agentd sends 500 when it shuts down) or else ``initial_delay``. A 429 or 503
    answer's ``Retry-After`` is waited instead. The count starts again once a connection
    delivers anything. The defaults ride out about two minutes of a server being away.

    Attributes:
        max_attempts: consecutive failed connections tolerated before giving up with
            :class:`~agentd_client.errors.AgentdConnectionError`.
        initial_delay: the first wait, in seconds, when the server sent no ``retry:``.
        max_delay: the longest wait between two attempts, in seconds.
        read_timeout: seconds without a byte after which a connection is taken as dead (the
            server sends a keep-alive comment every 15 s).
    """

    max_attempts: int = 30
    initial_delay: float = 0.5
    max_delay: float = 5.0
    read_timeout: float = 45.0

    def __post_init__(self) -> None:
        if self.max_attempts < 0:
            raise ValueError("max_attempts must not be negative")


class EventFollower:
    """The state of one ``events()`` iteration: what to send when (re)connecting, what to make of
    each line received, and how long to wait after a connection ends early."""

    def __init__(
        self,
        run_id: str,
        *,
        after: int | None,
        include_deltas: bool,
        policy: ReconnectPolicy,
        on_reconnect: ReconnectHook | None,
    ) -> None:
        self.path = f"/v1/runs/{run_id}/events"
        self.done = False
        self._include_deltas = include_deltas
        self._policy = policy
        self._on_reconnect = on_reconnect
        self._decoder = SSEDecoder()
        if after is not None:
            self._decoder.last_event_id = str(after)
        self._last_seq = after if after is not None else 0
        self._failures = 0
        self._connections = 0

    def headers(self) -> dict[str, str]:
        """The headers of the next request: ``Last-Event-ID`` once there is one."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self._decoder.last_event_id is not None:
            headers["Last-Event-ID"] = self._decoder.last_event_id
        return headers

    def connected(self) -> None:
        """A request was answered with the stream (200): tell the hook when it is a resumption."""
        self._connections += 1
        self._decoder = _continue(self._decoder)
        if self._connections > 1 and self._on_reconnect is not None:
            self._on_reconnect(self._decoder.last_event_id)

    def feed(self, line: str) -> Event | None:
        """Take one line of the stream; answer the event it completes that is to be yielded.

        Raises:
            StreamClosedError: the server ended the stream for good (``stream.closed``).
            AgentdError: a message whose data is not an event envelope.
        """
        self._failures = 0
        message = self._decoder.feed(line)
        if message is None:
            return None
        try:
            envelope = json.loads(message.data)
        except ValueError as exc:
            raise AgentdError(f"malformed event data from {self.path}: {exc}") from exc
        if not isinstance(envelope, dict):
            raise AgentdError(f"malformed event data from {self.path}: not an object")
        if message.event == "stream.closed" or envelope.get("type") == "stream.closed":
            raise StreamClosedError(str(envelope.get("reason", "")), str(envelope.get("detail", "")))
        envelope.setdefault("type", message.event)
        event = Event.from_envelope(envelope)
        if event.seq is None:
            return event if self._include_deltas else None
        if event.seq <= self._last_seq:
            return None  # already yielded: never repeat an event
        self._last_seq = event.seq
        self.done = event.is_terminal
        return event

    def failed(self, reason: str, retry_after: float | None = None) -> float:
        """The connection ended (or could not be made) before the terminal event: answer the
        seconds to wait before the next attempt.

        Raises:
            AgentdConnectionError: the attempts are used up.
        """
        self._failures += 1
        if self._failures > self._policy.max_attempts:
            raise AgentdConnectionError(
                f"gave up following {self.path} after {self._failures} failed connections "
                f"(last: {reason})"
            )
        if retry_after is not None:
            return min(retry_after, 60.0)
        retry_ms = self._decoder.retry_ms
        base = retry_ms / 1000 if retry_ms is not None else self._policy.initial_delay
        return min(max(self._policy.max_delay, base), base * 2.0 ** (self._failures - 1))


def _continue(decoder: SSEDecoder) -> SSEDecoder:
    """A decoder for a new connection, keeping the last event id and the reconnection time:
    a message cut by the drop must not run into the first one of the next connection."""
    fresh = SSEDecoder()
    fresh.last_event_id = decoder.last_event_id
    fresh.retry_ms = decoder.retry_ms
    return fresh
