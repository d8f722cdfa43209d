"""The exceptions the client raises.

Every error answered by agentd is an RFC 9457 problem document (``application/problem+json``)
and is raised as a :class:`ProblemError`, or rather as the subclass for its ``type``
(``/problems/<slug>``), falling back on its HTTP status for a type this client does not know.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = [
    "AgentdConnectionError",
    "AgentdError",
    "BadRequestError",
    "ConflictError",
    "FieldError",
    "ForbiddenError",
    "InternalServerError",
    "MethodNotAllowedError",
    "NotConfiguredError",
    "NotFoundError",
    "PayloadTooLargeError",
    "ProblemError",
    "RateLimitedError",
    "RequestTimeoutError",
    "StreamClosedError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "UpstreamError",
    "ValidationError",
    "WaitTimeoutError",
    "WebhookVerificationError",
]


class AgentdError(Exception):
    """The base class of every exception raised by this package."""


class AgentdConnectionError(AgentdError):
    """The server could not be reached, or the connection broke, after every allowed attempt."""


@dataclass(frozen=True)
class FieldError:
    """One offending field of a validation error: ``crew.tasks[0].agent`` and why."""

    field: str
    message: str


class ProblemError(AgentdError):
    """An error answered by the server as a problem document.

    Attributes:
        status: the HTTP status.
        type: the problem type, ``/problems/<slug>`` (``about:blank`` when the body was no
            problem document).
        title: the status's reason phrase.
        detail: what went wrong, for people.
        errors: for validation errors, every offending field.
        retry_after: the ``Retry-After`` header in seconds (429 and 503 answers), else ``None``.
    """

    slug: ClassVar[str | None] = None
    """The ``/problems/<slug>`` this class stands for (``None``: only chosen by status)."""

    def __init__(
        self,
        status: int,
        type: str,  # noqa: A002 - the RFC 9457 member's name
        title: str,
        detail: str,
        errors: Sequence[FieldError] = (),
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.type = type
        self.title = title
        self.detail = detail
        self.errors: tuple[FieldError, ...] = tuple(errors)
        self.retry_after = retry_after
        message = f"{status} {title}: {detail}" if detail else f"{status} {title}"
        if self.errors:
            message += " (" + "; ".join(f"{e.field}: {e.message}" for e in self.errors) + ")"
        super().__init__(message)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(status={self.status!r}, type={self.type!r}, "
            f"title={self.title!r}, detail={self.detail!r}, errors={list(self.errors)!r})"
        )

    def to_dict(self) -> dict[str, Any]:
        """The problem document as the server sent it (``errors`` only when there are some)."""
        document: dict[str, Any] = {
            "type": self.type,
            "title": self.title,
            "status": self.status,
            "detail": self.detail,
        }
        if self.errors:
            document["errors"] = [{"field": e.field, "message": e.message} for e in self.errors]
        return document


class BadRequestError(ProblemError):
    """400: malformed JSON, a bad query parameter or header."""

    slug = "bad-request"


class UnauthorizedError(ProblemError):
    """401: no valid API key."""

    slug = "unauthorized"


class ForbiddenError(ProblemError):
    """403: the key lacks the scope the operation needs (the detail names it)."""

    slug = "forbidden"


class NotFoundError(ProblemError):
    """404: the resource does not exist, or is another tenant's."""

    slug = "not-found"


class MethodNotAllowedError(ProblemError):
    """405."""

    slug = "method-not-allowed"


class RequestTimeoutError(ProblemError):
    """408: the request's body did not arrive in time."""

    slug = "request-timeout"


class ConflictError(ProblemError):
    """409: the request does not fit the resource's state."""

    slug = "conflict"


class PayloadTooLargeError(ProblemError):
    """413: a body over the server's limit."""

    slug = "payload-too-large"


class UnsupportedMediaTypeError(ProblemError):
    """415: a body that is not JSON."""

    slug = "unsupported-media-type"


class ValidationError(ProblemError):
    """422: the body breaks a rule; :attr:`errors` names every offending field."""

    slug = "validation"


class RateLimitedError(ProblemError):
    """429: a quota or rate limit; :attr:`retry_after` says when to try again."""

    slug = "quota"


class InternalServerError(ProblemError):
    """500: a bug in the server (logged there with its cause)."""

    slug = "internal"


class NotConfiguredError(ProblemError):
    """501: a feature the server was not configured for (secrets, webhooks)."""

    slug = "not-configured"


class UpstreamError(ProblemError):
    """502: an upstream service answered badly."""

    slug = "upstream"


class UnavailableError(ProblemError):
    """503: the server cannot serve now; :attr:`retry_after` says when to try again."""

    slug = "unavailable"


_BY_SLUG: dict[str, type[ProblemError]] = {
    cls.slug: cls
    for cls in (
        BadRequestError,
        UnauthorizedError,
        ForbiddenError,
        NotFoundError,
        MethodNotAllowedError,
        RequestTimeoutError,
        ConflictError,
        PayloadTooLargeError,
        UnsupportedMediaTypeError,
        ValidationError,
        RateLimitedError,
        InternalServerError,
        NotConfiguredError,
        UpstreamError,
        UnavailableError,
    )
    if cls.slug is not None
}
_BY_STATUS: dict[int, type[ProblemError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    408: RequestTimeoutError,
    409: ConflictError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: ValidationError,
    429: RateLimitedError,
    500: InternalServerError,
    501: NotConfiguredError,
    502: UpstreamError,
    503: UnavailableError,
}


def parse_retry_after(value: str | None) -> float | None:
    """The seconds of a ``Retry-After`` header given in seconds, or ``None``.

    agentd always sends seconds; an HTTP date (allowed by RFC 9110) is not used by it and is
    treated as absent.
    """
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def problem_from_response(
    status: int, body: bytes, headers: Mapping[str, str]
) -> ProblemError:
    """The exception for an error answer: its status, body and headers.

    A body that is not a problem document (a proxy's HTML page, say) still gives the exception
    of its status, with type ``about:blank`` and the start of the body as its detail.
    """
    document: Any
    try:
        document = json.loads(body) if body else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        document = {"detail": body[:500].decode("utf-8", "replace").strip()}
    type_ = str(document.get("type") or "about:blank")
    slug = type_.removeprefix("/problems/") if type_.startswith("/problems/") else None
    cls = (_BY_SLUG.get(slug) if slug else None) or _BY_STATUS.get(status, ProblemError)
    raw_errors = document.get("errors")
    errors = [
        FieldError(field=str(e.get("field", "")), message=str(e.get("message", "")))
        for e in (raw_errors if isinstance(raw_errors, list) else [])
        if isinstance(e, dict)
    ]
    title = str(document.get("title") or f"HTTP {status}")
    detail = str(document.get("detail") or "")
    doc_status = document.get("status")
    status = doc_status if isinstance(doc_status, int) else status
    retry_after = parse_retry_after(headers.get("retry-after"))
    return cls(status, type_, title, detail, errors, retry_after=retry_after)


class StreamClosedError(AgentdError):
    """The server closed an event stream for good: its key was revoked or expired, or its tenant
    deleted (``event: stream.closed``). Reconnecting with the same key is refused."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(f"the server closed the event stream: {reason}: {detail}")


class WaitTimeoutError(AgentdError):
    """A run did not end (nor stop for input) within the time given; :attr:`run` is how it stood."""

    def __init__(self, run_id: str, timeout: float, run: Any) -> None:
        self.run_id = run_id
        self.run = run
        super().__init__(f"run {run_id} did not end within {timeout:g} s")


class WebhookVerificationError(AgentdError):
    """A webhook delivery failed verification: missing headers, a bad signature or an old or
    future timestamp."""
