"""The Python client of agentd.

Hand-written, typed layer: :class:`Agentd` and :class:`AsyncAgentd` (kickoffs with idempotency
keys, retries, waiting, event streams that resume exactly, approvals), typed problem errors
(:mod:`agentd_client.errors`) and :func:`verify_webhook`. Everything else is in the generated
layer, :mod:`agentd_client._generated`, reachable through a client's ``api`` attribute.
"""

from ._client import Agentd, AsyncAgentd, KickoffHook
from ._events import TERMINAL_EVENT_TYPES, Event, ReconnectHook, ReconnectPolicy
from ._generated.models.run import Run
from ._retry import RetryPolicy
from ._version import __version__
from .errors import (
    AgentdConnectionError,
    AgentdError,
    BadRequestError,
    ConflictError,
    FieldError,
    ForbiddenError,
    InternalServerError,
    MethodNotAllowedError,
    NotConfiguredError,
    NotFoundError,
    PayloadTooLargeError,
    ProblemError,
    RateLimitedError,
    RequestTimeoutError,
    StreamClosedError,
    UnauthorizedError,
    UnavailableError,
    UnsupportedMediaTypeError,
    UpstreamError,
    ValidationError,
    WaitTimeoutError,
    WebhookVerificationError,
)
from .webhooks import verify_webhook

__all__ = [
    "TERMINAL_EVENT_TYPES",
    "Agentd",
    "AgentdConnectionError",
    "AgentdError",
    "AsyncAgentd",
    "BadRequestError",
    "ConflictError",
    "Event",
    "FieldError",
    "ForbiddenError",
    "InternalServerError",
    "KickoffHook",
    "MethodNotAllowedError",
    "NotConfiguredError",
    "NotFoundError",
    "PayloadTooLargeError",
    "ProblemError",
    "RateLimitedError",
    "ReconnectHook",
    "ReconnectPolicy",
    "RequestTimeoutError",
    "RetryPolicy",
    "Run",
    "StreamClosedError",
    "UnauthorizedError",
    "UnavailableError",
    "UnsupportedMediaTypeError",
    "UpstreamError",
    "ValidationError",
    "WaitTimeoutError",
    "WebhookVerificationError",
    "__version__",
    "verify_webhook",
]
