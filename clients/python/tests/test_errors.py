"""Problem documents become typed exceptions; the API key never shows."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from stub import Reply, StubServer, json_reply, problem

import agentd_client
from agentd_client import (
    Agentd,
    BadRequestError,
    ConflictError,
    FieldError,
    ForbiddenError,
    NotFoundError,
    ProblemError,
    RateLimitedError,
    UnauthorizedError,
    UnavailableError,
    UpstreamError,
    ValidationError,
)
from agentd_client.errors import problem_from_response

NO_RETRY = agentd_client.RetryPolicy(max_attempts=1)


def test_a_validation_problem_names_every_field() -> None:
    document = problem(
        422, "validation", "2 fields are invalid",
        errors=[{"field": "crew.tasks[0].agent", "message": "unknown agent 'ghost'"},
                {"field": "inputs.topic", "message": "missing input 'topic'"}],
    )
    with StubServer([json_reply(422, document)]) as stub:
        with Agentd(stub.url) as client:
            with pytest.raises(ValidationError) as raised:
                client.kickoff("research")
    error = raised.value
    assert (error.status, error.type, error.title) == (422, "/problems/validation", "Unprocessable Entity")
    assert error.errors == (
        FieldError("crew.tasks[0].agent", "unknown agent 'ghost'"),
        FieldError("inputs.topic", "missing input 'topic'"),
    )
    assert "crew.tasks[0].agent" in str(error)
    assert error.to_dict() == document


@pytest.mark.parametrize(
    ("status", "slug", "expected"),
    [
        (400, "bad-request", BadRequestError),
        (401, "unauthorized", UnauthorizedError),
        (403, "forbidden", ForbiddenError),
        (404, "not-found", NotFoundError),
        (409, "conflict", ConflictError),
        (429, "quota", RateLimitedError),
        (503, "unavailable", UnavailableError),
        (502, "upstream", UpstreamError),
        (409, "some-new-slug", ConflictError),  # an unknown type: chosen by status
        (418, "teapot", ProblemError),
    ],
)
def test_each_problem_type_has_its_class(status: int, slug: str, expected: type[ProblemError]) -> None:
    error = problem_from_response(status, json_reply(status, problem(status, slug, "d")).body, {})  # type: ignore[arg-type]
    assert type(error) is expected
    assert error.status == status and error.detail == "d"


def test_retry_after_is_read_from_the_header() -> None:
    body = json_reply(429, problem(429, "quota", "later")).body
    error = problem_from_response(429, body, {"retry-after": "5"})  # type: ignore[arg-type]
    assert isinstance(error, RateLimitedError) and error.retry_after == 5


def test_a_body_that_is_no_problem_document() -> None:
    with StubServer([Reply(502, {"Content-Type": "text/html"}, b"<h1>Bad Gateway</h1>")]) as stub:
        with Agentd(stub.url, retry=NO_RETRY) as client:
            with pytest.raises(UpstreamError) as raised:
                client.get_run(uuid.uuid4())
    assert raised.value.type == "about:blank"
    assert raised.value.detail == "<h1>Bad Gateway</h1>"


def test_the_key_is_sent_but_never_shown() -> None:
    key = "agd_very-secret-key"
    with StubServer([json_reply(401, problem(401, "unauthorized", "a valid key is needed"))]) as stub:
        with Agentd(stub.url, api_key=key) as client:
            with pytest.raises(UnauthorizedError) as raised:
                client.get_run(uuid.uuid4())
            shown = [repr(client), str(client), repr(client.api), repr(client._http.auth),
                     str(raised.value), repr(raised.value), repr(raised.value.__cause__)]
    assert stub.requests[0].headers["authorization"] == f"Bearer {key}"
    assert not [text for text in shown if key in text]


def test_the_version_is_the_servers() -> None:
    cargo = (Path(__file__).resolve().parents[3] / "Cargo.toml").read_text()
    server = re.search(r'^\[package\][^[]*?^version\s*=\s*"([^"]+)"', cargo, re.M | re.S)
    assert server is not None
    assert agentd_client.__version__ == server.group(1)
