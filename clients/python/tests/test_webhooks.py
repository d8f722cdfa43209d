"""Webhook verification, cross-checked against the standardwebhooks package."""

from __future__ import annotations

import base64
import json
import os
from datetime import datetime, timedelta, timezone

import pytest
from standardwebhooks.webhooks import Webhook

from agentd_client import WebhookVerificationError, verify_webhook

SECRET = "whsec_" + base64.b64encode(os.urandom(32)).decode()
BODY = json.dumps({"seq": 4, "run_id": "r1", "type": "run.completed", "at": "2026-01-02T03:04:05Z",
                   "task": None, "agent": None, "data": {"output": {"raw": "done"}}})


def signed(body: str = BODY, secret: str = SECRET, at: datetime | None = None) -> dict[str, str]:
    """Headers as a Standard Webhooks sender makes them."""
    at = at or datetime.now(tz=timezone.utc)
    signature = Webhook(secret).sign("msg_1", at, body)
    return {"webhook-id": "msg_1", "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": signature}


def test_a_signed_delivery_is_verified_and_parsed() -> None:
    headers = signed()
    assert verify_webhook(SECRET, headers, BODY) == json.loads(BODY)
    assert verify_webhook(SECRET, headers, BODY.encode()) == json.loads(BODY)
    # Any header case, as web frameworks hand them over.
    assert verify_webhook(SECRET, {k.title(): v for k, v in headers.items()}, BODY)["seq"] == 4


def test_the_reference_library_accepts_what_we_accept() -> None:
    headers = signed()
    assert Webhook(SECRET).verify(BODY, headers) == verify_webhook(SECRET, headers, BODY)


def test_a_tampered_body_is_rejected() -> None:
    headers = signed()
    with pytest.raises(WebhookVerificationError, match="signature"):
        verify_webhook(SECRET, headers, BODY.replace("done", "d0ne"))


def test_another_secret_is_rejected() -> None:
    other = "whsec_" + base64.b64encode(os.urandom(32)).decode()
    with pytest.raises(WebhookVerificationError, match="signature"):
        verify_webhook(other, signed(), BODY)


def test_an_old_or_future_timestamp_is_rejected() -> None:
    now = datetime.now(tz=timezone.utc)
    with pytest.raises(WebhookVerificationError, match="too old"):
        verify_webhook(SECRET, signed(at=now - timedelta(seconds=301)), BODY)
    with pytest.raises(WebhookVerificationError, match="future"):
        verify_webhook(SECRET, signed(at=now + timedelta(seconds=301)), BODY)
    assert verify_webhook(SECRET, signed(at=now - timedelta(seconds=200)), BODY)["seq"] == 4
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, signed(at=now - timedelta(seconds=200)), BODY, tolerance=100)


def test_any_of_several_signatures_may_match_during_rotation() -> None:
    old_secret = "whsec_" + base64.b64encode(os.urandom(24)).decode()
    headers = signed(secret=old_secret)
    new_signature = signed()["webhook-signature"]
    headers["webhook-signature"] = f"v1a,xyz {headers['webhook-signature']} {new_signature}"
    assert verify_webhook(SECRET, headers, BODY)["seq"] == 4
    assert verify_webhook(old_secret, headers, BODY)["seq"] == 4


def test_missing_headers_and_other_versions_are_rejected() -> None:
    headers = signed()
    del headers["webhook-id"]
    with pytest.raises(WebhookVerificationError, match="webhook-id"):
        verify_webhook(SECRET, headers, BODY)
    headers = signed()
    headers["webhook-signature"] = headers["webhook-signature"].replace("v1,", "v2,")
    with pytest.raises(WebhookVerificationError):
        verify_webhook(SECRET, headers, BODY)


def test_a_malformed_secret_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        verify_webhook("whsec_not base64!", signed(), BODY)
