"""The clients: :class:`Agentd` (blocking) and :class:`AsyncAgentd` (asyncio)."""

from __future__ import annotations

import asyncio
import math
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Generator, Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from ._events import Event, EventFollower, ReconnectHook, ReconnectPolicy
from ._generated.client import Client as GeneratedClient
from ._generated.models.run import Run
from ._retry import NO_RETRY, AsyncRetryTransport, RetryPolicy, RetryTransport
from ._version import __version__
from .errors import AgentdConnectionError, WaitTimeoutError, parse_retry_after, problem_from_response

__all__ = ["Agentd", "AsyncAgentd", "KickoffHook"]

KickoffHook = Callable[[Run, str], None]
"""Called by ``kickoff_and_wait`` once the run is kicked off, with the run and the
``Idempotency-Key`` its kickoff carried."""

_STOPPED = frozenset({"completed", "failed", "cancelled", "awaiting_input"})
_LONG_POLL_MAX_S = 300
_DEFAULT_TIMEOUT = httpx.Timeout(30.0, connect=10.0)


class _BearerAuth(httpx.Auth):
    """``Authorization: Bearer <key>`` on every request; the key never shows in a repr."""

    def __init__(self, api_key: str) -> None:
        self._api_key = api_key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._api_key}"
        yield request

    def __repr__(self) -> str:
        return "_BearerAuth(api_key=<redacted>)"


def _segment(value: object) -> str:
    """A path segment: the value with every reserved character percent-encoded."""
    return quote(str(value), safe="")


def _kickoff_body(
    crew: str | Mapping[str, Any], inputs: Any, fields: Mapping[str, Any]
) -> dict[str, Any]:
    body: dict[str, Any] = {"crew": crew}
    if inputs is not None:
        body["inputs"] = inputs
    body.update(fields)
    return body


def _approval_body(
    approve: bool, arguments: Mapping[str, Any] | None, reason: str | None
) -> dict[str, Any]:
    body: dict[str, Any] = {"approve": approve}
    if arguments is not None:
        body["arguments"] = dict(arguments)
    if reason is not None:
        body["reason"] = reason
    return body


def _raise_for_problem(response: httpx.Response) -> None:
    if response.status_code >= 400:
        raise problem_from_response(response.status_code, response.content, response.headers)


def _run(response: httpx.Response) -> Run:
    _raise_for_problem(response)
    return Run.from_dict(response.json())


def _runs(response: httpx.Response) -> list[Run]:
    _raise_for_problem(response)
    return [Run.from_dict(run) for run in response.json()["runs"]]


class _WaitClock:
    """The long polls of one ``wait``: how long each may last, and whether time is up."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._deadline = None if timeout is None else time.monotonic() + timeout

    def next_poll_s(self) -> int:
        if self._deadline is None:
            return _LONG_POLL_MAX_S
        left = self._deadline - time.monotonic()
        return max(0, min(_LONG_POLL_MAX_S, math.ceil(left)))

    def expired(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline


class _Base:
    """What both clients share: configuration and the HTTP client's settings."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        timeout: httpx.Timeout | float,
        retry: RetryPolicy,
        reconnect: ReconnectPolicy,
        headers: Mapping[str, str] | None,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._retry = retry
        self._reconnect = reconnect
        self._auth = _BearerAuth(api_key) if api_key else None
        self._headers = {"User-Agent": f"agentd-client-python/{__version__}", **(headers or {})}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r})"

    def _long_poll_timeout(self, poll_s: int) -> httpx.Timeout:
        return httpx.Timeout(self._timeout.connect, read=poll_s + 30.0)

    def _stream_timeout(self) -> httpx.Timeout:
        return httpx.Timeout(self._timeout.connect, read=self._reconnect.read_timeout)

    def _follower(
        self,
        run_id: uuid.UUID | str,
        after: int | None,
        include_deltas: bool,
        on_reconnect: ReconnectHook | None,
    ) -> EventFollower:
        return EventFollower(
            _segment(run_id),
            after=after,
            include_deltas=include_deltas,
            policy=self._reconnect,
            on_reconnect=on_reconnect,
        )


class Agentd(_Base):
    """A blocking client of an agentd server.

    >>> with Agentd("http://127.0.0.1:8080", api_key="agd_...") as agentd:
    ...     run = agentd.kickoff_and_wait(crew, {"topic": "tides"})

    Args:
        base_url: the server's URL (``http://127.0.0.1:8080``).
        api_key: sent as ``Authorization: Bearer``; omit it for a server without keys. It never
            appears in a repr, an exception or a log line.
        timeout: seconds (or an ``httpx.Timeout``) for ordinary requests; long polls and event
            streams get their own read timeouts.
        retry: when requests are retried (429, 503, connection errors of safe requests).
        reconnect: how event streams reconnect.
        headers: extra headers sent with every request.
        transport: the httpx transport under the retries (tests and proxies).

    The generated low-level client, for every other operation, is :attr:`api`; it shares this
    client's connections, key and retries.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: httpx.Timeout | float = _DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        reconnect: ReconnectPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            base_url, api_key, timeout, retry or RetryPolicy(), reconnect or ReconnectPolicy(), headers
        )
        self._http = httpx.Client(
            base_url=self._base_url,
            auth=self._auth,
            headers=self._headers,
            timeout=self._timeout,
            transport=RetryTransport(transport or httpx.HTTPTransport(), self._retry),
        )
        self.api: GeneratedClient = GeneratedClient(base_url=self._base_url).set_httpx_client(
            self._http
        )

    def __enter__(self) -> Agentd:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._http.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise AgentdConnectionError(f"{method} {path}: {exc}") from exc

    def kickoff(
        self,
        crew: str | Mapping[str, Any],
        inputs: Mapping[str, Any] | None = None,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> Run:
        """Kick off a run of ``crew`` (a spec, or a registered crew's name) with ``inputs``.

        The request carries an ``Idempotency-Key``: ``idempotency_key``, or a new UUID; every
        retry of this call sends the same one, so it starts at most one run. ``fields`` are the
        kickoff's other members (``metadata``, ``timeout_s``, ``stream``, ``webhooks``, ...).

        Returns:
            The run as kicked off (``queued``, or further along), or, for a key the server has
            seen, the run that key started.
        """
        key = idempotency_key or str(uuid.uuid4())
        return _run(
            self._request(
                "POST",
                "/v1/kickoffs",
                json=_kickoff_body(crew, inputs, fields),
                headers={"Idempotency-Key": key},
            )
        )

    def kickoff_batch(
        self,
        crew: str | Mapping[str, Any],
        inputs: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> list[Run]:
        """Kick off one run of ``crew`` per input set, all or none (``POST /v1/kickoffs/batch``),
        with an ``Idempotency-Key`` as :meth:`kickoff` does."""
        key = idempotency_key or str(uuid.uuid4())
        return _runs(
            self._request(
                "POST",
                "/v1/kickoffs/batch",
                json=_kickoff_body(crew, list(inputs), fields),
                headers={"Idempotency-Key": key},
            )
        )

    def get_run(self, run_id: uuid.UUID | str) -> Run:
        """The run with its tasks, output, error and usage."""
        return _run(self._request("GET", f"/v1/runs/{_segment(run_id)}"))

    def wait(self, run_id: uuid.UUID | str, timeout: float | None = None) -> Run:
        """Wait until the run has ended or awaits input (a review or a tool call's approval).

        Long-polls ``GET /v1/runs/{id}/wait`` as often as needed.

        Args:
            timeout: seconds to wait at most; ``None`` waits as long as it takes.

        Raises:
            WaitTimeoutError: the time is up; its ``run`` is how the run stood.
        """
        clock = _WaitClock(timeout)
        while True:
            poll_s = clock.next_poll_s()
            run = _run(
                self._request(
                    "GET",
                    f"/v1/runs/{_segment(run_id)}/wait",
                    params={"timeout_s": poll_s},
                    timeout=self._long_poll_timeout(poll_s),
                )
            )
            if run.status.value in _STOPPED:
                return run
            if clock.expired():
                raise WaitTimeoutError(str(run_id), clock.timeout or 0.0, run)

    def kickoff_and_wait(
        self,
        crew: str | Mapping[str, Any],
        inputs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = 600.0,
        idempotency_key: str | None = None,
        on_kickoff: KickoffHook | None = None,
        **fields: Any,
    ) -> Run:
        """:meth:`kickoff`, then :meth:`wait` (``timeout`` seconds at most, from the kickoff's
        answer on); ``on_kickoff`` is told the run and its idempotency key in between."""
        key = idempotency_key or str(uuid.uuid4())
        run = self.kickoff(crew, inputs, idempotency_key=key, **fields)
        if on_kickoff is not None:
            on_kickoff(run, key)
        return self.wait(run.id, timeout=timeout)

    def cancel(self, run_id: uuid.UUID | str) -> Run:
        """Cancel a run: a queued run at once, a running one as soon as its worker notices."""
        return _run(self._request("POST", f"/v1/runs/{_segment(run_id)}/cancel"))

    def approve_tool_call(
        self,
        run_id: uuid.UUID | str,
        tool_call_id: str,
        approve: bool = True,
        arguments: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> Run:
        """Decide on a tool call that awaits approval.

        Args:
            tool_call_id: the call's id (``<task>#<iteration>/<provider id>``, as in
                ``tool.approval_requested``); it is percent-encoded here.
            approve: run the call, or not.
            arguments: approving, the arguments to run it with instead of the model's.
            reason: rejecting, why (the model is told).

        Returns:
            The run as it is now (queued again when no call waits any more).
        """
        return _run(
            self._request(
                "POST",
                f"/v1/runs/{_segment(run_id)}/tool-calls/{_segment(tool_call_id)}/approval",
                json=_approval_body(approve, arguments, reason),
            )
        )

    def events(
        self,
        run_id: uuid.UUID | str,
        after: int | None = None,
        *,
        include_deltas: bool = False,
        on_reconnect: ReconnectHook | None = None,
    ) -> Generator[Event, None, None]:
        """The run's events, from the start (or after seq ``after``), live until the run ends.

        The iteration ends after ``run.completed``, ``run.failed`` or ``run.cancelled``. When the
        connection drops before that (the stream ends early, the connection is refused or reset,
        the server answers 5xx), it reconnects with backoff (honouring the server's ``retry:``)
        and resumes with ``Last-Event-ID`` set to the last event received: no event is repeated
        or lost. Keep-alive comments are skipped; ``llm.delta`` events (live text of a streaming
        run, without ``seq``) are yielded only with ``include_deltas``. ``on_reconnect`` is
        called with the ``Last-Event-ID`` each time the stream resumes. Leaving the loop early
        leaves the connection open until the generator is closed (``contextlib.closing``).

        Raises:
            StreamClosedError: the server ended the stream for good (the key was revoked...).
            ProblemError: the server refused the stream (404 for an unknown run, 401, 403).
            AgentdConnectionError: reconnecting failed ``reconnect.max_attempts`` times in a row.
        """
        follower = self._follower(run_id, after, include_deltas, on_reconnect)
        while True:
            try:
                with self._http.stream(
                    "GET",
                    follower.path,
                    headers=follower.headers(),
                    timeout=self._stream_timeout(),
                    extensions={NO_RETRY: True},
                ) as response:
                    if response.status_code == 204:
                        return
                    if response.status_code == 429 or response.status_code >= 500:
                        response.read()
                        wait = follower.failed(
                            f"HTTP {response.status_code}",
                            parse_retry_after(response.headers.get("retry-after")),
                        )
                    else:
                        if response.status_code >= 400:
                            response.read()
                            _raise_for_problem(response)
                        follower.connected()
                        for line in response.iter_lines():
                            event = follower.feed(line)
                            if event is not None:
                                yield event
                            if follower.done:
                                return
                        wait = follower.failed("the stream ended before the run")
            except httpx.TransportError as exc:
                wait = follower.failed(f"{type(exc).__name__}: {exc}")
            time.sleep(wait)


class AsyncAgentd(_Base):
    """The asyncio client: :class:`Agentd`'s methods as coroutines, ``events`` as an async
    iterator (close it with ``contextlib.aclosing`` when leaving it early).

    :attr:`api` is the generated low-level client, for its ``asyncio`` functions.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: httpx.Timeout | float = _DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        reconnect: ReconnectPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(
            base_url, api_key, timeout, retry or RetryPolicy(), reconnect or ReconnectPolicy(), headers
        )
        self._http = httpx.AsyncClient(
            base_url=self._base_url,
            auth=self._auth,
            headers=self._headers,
            timeout=self._timeout,
            transport=AsyncRetryTransport(transport or httpx.AsyncHTTPTransport(), self._retry),
        )
        self.api: GeneratedClient = GeneratedClient(
            base_url=self._base_url
        ).set_async_httpx_client(self._http)

    async def __aenter__(self) -> AsyncAgentd:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise AgentdConnectionError(f"{method} {path}: {exc}") from exc

    async def kickoff(
        self,
        crew: str | Mapping[str, Any],
        inputs: Mapping[str, Any] | None = None,
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> Run:
        """See :meth:`Agentd.kickoff`."""
        key = idempotency_key or str(uuid.uuid4())
        return _run(
            await self._request(
                "POST",
                "/v1/kickoffs",
                json=_kickoff_body(crew, inputs, fields),
                headers={"Idempotency-Key": key},
            )
        )

    async def kickoff_batch(
        self,
        crew: str | Mapping[str, Any],
        inputs: Sequence[Mapping[str, Any]],
        *,
        idempotency_key: str | None = None,
        **fields: Any,
    ) -> list[Run]:
        """See :meth:`Agentd.kickoff_batch`."""
        key = idempotency_key or str(uuid.uuid4())
        return _runs(
            await self._request(
                "POST",
                "/v1/kickoffs/batch",
                json=_kickoff_body(crew, list(inputs), fields),
                headers={"Idempotency-Key": key},
            )
        )

    async def get_run(self, run_id: uuid.UUID | str) -> Run:
        """See :meth:`Agentd.get_run`."""
        return _run(await self._request("GET", f"/v1/runs/{_segment(run_id)}"))

    async def wait(self, run_id: uuid.UUID | str, timeout: float | None = None) -> Run:
        """See :meth:`Agentd.wait`."""
        clock = _WaitClock(timeout)
        while True:
            poll_s = clock.next_poll_s()
            run = _run(
                await self._request(
                    "GET",
                    f"/v1/runs/{_segment(run_id)}/wait",
                    params={"timeout_s": poll_s},
                    timeout=self._long_poll_timeout(poll_s),
                )
            )
            if run.status.value in _STOPPED:
                return run
            if clock.expired():
                raise WaitTimeoutError(str(run_id), clock.timeout or 0.0, run)

    async def kickoff_and_wait(
        self,
        crew: str | Mapping[str, Any],
        inputs: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = 600.0,
        idempotency_key: str | None = None,
        on_kickoff: KickoffHook | None = None,
        **fields: Any,
    ) -> Run:
        """See :meth:`Agentd.kickoff_and_wait`."""
        key = idempotency_key or str(uuid.uuid4())
        run = await self.kickoff(crew, inputs, idempotency_key=key, **fields)
        if on_kickoff is not None:
            on_kickoff(run, key)
        return await self.wait(run.id, timeout=timeout)

    async def cancel(self, run_id: uuid.UUID | str) -> Run:
        """See :meth:`Agentd.cancel`."""
        return _run(await self._request("POST", f"/v1/runs/{_segment(run_id)}/cancel"))

    async def approve_tool_call(
        self,
        run_id: uuid.UUID | str,
        tool_call_id: str,
        approve: bool = True,
        arguments: Mapping[str, Any] | None = None,
        reason: str | None = None,
    ) -> Run:
        """See :meth:`Agentd.approve_tool_call`."""
        return _run(
            await self._request(
                "POST",
                f"/v1/runs/{_segment(run_id)}/tool-calls/{_segment(tool_call_id)}/approval",
                json=_approval_body(approve, arguments, reason),
            )
        )

    async def events(
        self,
        run_id: uuid.UUID | str,
        after: int | None = None,
        *,
        include_deltas: bool = False,
        on_reconnect: ReconnectHook | None = None,
    ) -> AsyncGenerator[Event, None]:
        """See :meth:`Agentd.events`."""
        follower = self._follower(run_id, after, include_deltas, on_reconnect)
        while True:
            try:
                async with self._http.stream(
                    "GET",
                    follower.path,
                    headers=follower.headers(),
                    timeout=self._stream_timeout(),
                    extensions={NO_RETRY: True},
                ) as response:
                    if response.status_code == 204:
                        return
                    if response.status_code == 429 or response.status_code >= 500:
                        await response.aread()
                        wait = follower.failed(
                            f"HTTP {response.status_code}",
                            parse_retry_after(response.headers.get("retry-after")),
                        )
                    else:
                        if response.status_code >= 400:
                            await response.aread()
                            _raise_for_problem(response)
                        follower.connected()
                        async for line in response.aiter_lines():
                            event = follower.feed(line)
                            if event is not None:
                                yield event
                            if follower.done:
                                return
                        wait = follower.failed("the stream ended before the run")
            except httpx.TransportError as exc:
                wait = follower.failed(f"{type(exc).__name__}: {exc}")
            await asyncio.sleep(wait)
