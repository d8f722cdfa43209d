"""Verifying agentd's webhook deliveries, the Standard Webhooks way.

A delivery carries ``webhook-id``, ``webhook-timestamp`` (Unix seconds) and
``webhook-signature``: space-separated ``v1,<base64 HMAC-SHA256>`` signatures of
``<id>.<timestamp>.<body>`` (two while an endpoint's secret is being rotated). The key is the
base64 after ``whsec_`` in the endpoint's secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from .errors import WebhookVerificationError

__all__ = ["verify_webhook"]

_SECRET_PREFIX = "whsec_"


def _key(secret: str) -> bytes:
    encoded = secret.removeprefix(_SECRET_PREFIX)
    try:
        return base64.b64decode(encoded, validate=True)
    except binascii.Error:
        raise ValueError("a webhook secret is whsec_ followed by base64") from None


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    tolerance: float = 300,
    *,
    now: float | None = None,
) -> Any:
    """Check a webhook delivery and answer its payload (the event envelope, JSON-decoded).

    Args:
        secret: the endpoint's secret, ``whsec_<base64>``.
        headers: the request's headers (any case).
        body: the request's body exactly as received: the signature covers its bytes.
        tolerance: how many seconds the ``webhook-timestamp`` may be from now, either way.
        now: the current Unix time (default: the clock's).

    Raises:
        WebhookVerificationError: a header is missing, the timestamp is out of tolerance, no
            signature matches, or the body is not JSON.
        ValueError: ``secret`` is not ``whsec_<base64>``.
    """
    key = _key(secret)
    lowered = {name.lower(): value for name, value in headers.items()}
    try:
        msg_id = lowered["webhook-id"]
        timestamp = lowered["webhook-timestamp"]
        signatures = lowered["webhook-signature"]
    except KeyError as missing:
        raise WebhookVerificationError(f"missing header {missing.args[0]}") from None
    try:
        sent_at = int(timestamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not an integer") from None
    current = time.time() if now is None else now
    if sent_at < current - tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old")
    if sent_at > current + tolerance:
        raise WebhookVerificationError("webhook-timestamp is in the future")

    payload = body.encode() if isinstance(body, str) else body
    signed = msg_id.encode() + b"." + timestamp.encode() + b"." + payload
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest())
    matched = False
    for signature in signatures.split():
        version, _, value = signature.partition(",")
        # Every signature is compared, so the time taken does not tell which one matched.
        if version == "v1" and hmac.compare_digest(value.encode(), expected):
            matched = True
    if not matched:
        raise WebhookVerificationError("no matching signature")
    try:
        return json.loads(payload)
    except ValueError:
        raise WebhookVerificationError("the body is not JSON") from None
