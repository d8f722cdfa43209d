"""Retries of HTTP requests, as an httpx transport shared by the hand-written and generated layers.

A request is sent again when the server answers 429 or 503 (waiting what its ``Retry-After``
says), and, for requests that are safe to repeat, when the connection fails: ``GET``, ``HEAD``,
``OPTIONS``, ``PUT`` and ``DELETE``, and any request carrying an ``Idempotency-Key`` (a kickoff:
the server answers the run of the first attempt to every later one). The request is re-sent as
it is, so a kickoff keeps its key on every attempt.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field

import httpx

from .errors import parse_retry_after

__all__ = ["AsyncRetryTransport", "RetryPolicy", "RetryTransport", "NO_RETRY"]

logger = logging.getLogger("agentd_client")

NO_RETRY = "agentd_client.no_retry"
"""A request extension: set it (to ``True``) for a request this transport must send only once."""

_IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
_RETRYABLE_ERRORS = (httpx.NetworkError, httpx.TimeoutException, httpx.RemoteProtocolError)


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before sending a request again.

    Attributes:
        max_attempts: attempts in all, the first included (1: never retry).
        backoff_initial: the wait before the second attempt when the server says nothing
            (a connection error, or a 429/503 without ``Retry-After``); doubled for each
            further attempt, with jitter.
        backoff_max: the longest such wait.
        max_retry_after: the longest ``Retry-After`` honoured: when the server asks for a longer
            wait (a daily quota resets at midnight), the error is raised at once instead.
        retry_statuses: the statuses answered that are retried.
    """

    max_attempts: int = 4
    backoff_initial: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 60.0
    retry_statuses: frozenset[int] = field(default_factory=lambda: frozenset({429, 503}))

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def backoff(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (from 1) when the server named none."""
        ceiling = min(self.backoff_max, self.backoff_initial * 2.0 ** (attempt - 1))
        return random.uniform(ceiling / 2, ceiling)

    def wait_after_status(self, attempt: int, retry_after: float | None) -> float | None:
        """The wait before retrying a retryable status, or ``None`` to give up."""
        if attempt >= self.max_attempts:
            return None
        if retry_after is None:
            return self.backoff(attempt)
        return retry_after if retry_after <= self.max_retry_after else None

    def wait_after_error(self, attempt: int, request: httpx.Request) -> float | None:
        """The wait before retrying a request whose connection failed, or ``None`` to give up."""
        if attempt >= self.max_attempts or not _safe_to_repeat(request):
            return None
        return self.backoff(attempt)


def _safe_to_repeat(request: httpx.Request) -> bool:
    return request.method in _IDEMPOTENT_METHODS or "idempotency-key" in request.headers


def _log_retry(request: httpx.Request, attempt: int, wait: float, why: str) -> None:
    # The URL's path only: never headers (the API key) nor the query.
    logger.info(
        "agentd: %s %s failed (%s, attempt %d); retrying in %.2f s",
        request.method,
        request.url.path,
        why,
        attempt,
        wait,
    )


class RetryTransport(httpx.BaseTransport):
    """Wraps a transport, retrying as :class:`RetryPolicy` says."""

    def __init__(self, wrapped: httpx.BaseTransport, policy: RetryPolicy) -> None:
        self._wrapped = wrapped
        self._policy = policy

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.extensions.get(NO_RETRY):
            return self._wrapped.handle_request(request)
        attempt = 1
        while True:
            try:
                response = self._wrapped.handle_request(request)
            except _RETRYABLE_ERRORS as exc:
                wait = self._policy.wait_after_error(attempt, request)
                if wait is None:
                    raise
                _log_retry(request, attempt, wait, type(exc).__name__)
            else:
                if response.status_code not in self._policy.retry_statuses:
                    return response
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                wait = self._policy.wait_after_status(attempt, retry_after)
                if wait is None:
                    return response
                response.read()
                response.close()
                _log_retry(request, attempt, wait, str(response.status_code))
            time.sleep(wait)
            attempt += 1

    def close(self) -> None:
        self._wrapped.close()


class AsyncRetryTransport(httpx.AsyncBaseTransport):
    """The asyncio twin of :class:`RetryTransport`."""

    def __init__(self, wrapped: httpx.AsyncBaseTransport, policy: RetryPolicy) -> None:
        self._wrapped = wrapped
        self._policy = policy

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.extensions.get(NO_RETRY):
            return await self._wrapped.handle_async_request(request)
        attempt = 1
        while True:
            try:
                response = await self._wrapped.handle_async_request(request)
            except _RETRYABLE_ERRORS as exc:
                wait = self._policy.wait_after_error(attempt, request)
                if wait is None:
                    raise
                _log_retry(request, attempt, wait, type(exc).__name__)
            else:
                if response.status_code not in self._policy.retry_statuses:
                    return response
                retry_after = parse_retry_after(response.headers.get("retry-after"))
                wait = self._policy.wait_after_status(attempt, retry_after)
                if wait is None:
                    return response
                await response.aread()
                await response.aclose()
                _log_retry(request, attempt, wait, str(response.status_code))
            await asyncio.sleep(wait)
            attempt += 1

    async def aclose(self) -> None:
        await self._wrapped.aclose()
