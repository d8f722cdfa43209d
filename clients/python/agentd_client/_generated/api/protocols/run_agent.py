from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.ag_ui_event import AgUiEvent
from ...models.problem import Problem
from ...models.run_agent_input import RunAgentInput
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: RunAgentInput,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/ag-ui/crews/{name}".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AgUiEvent | Problem | None:
    if response.status_code == 200:
        response_200 = AgUiEvent.from_dict(response.text)

        return response_200

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())

        return response_408

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())

        return response_415

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[AgUiEvent | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunAgentInput,
) -> Response[AgUiEvent | Problem]:
    """Run a published crew as an AG-UI agent.

     The answer is `text/event-stream`: one AG-UI event per message. Refusals before the stream
    opens are problems (404 unknown or unpublished crew, 409 a thread busy with another run,
    422 bad input or a resume naming no open interrupt). A stream whose key is revoked, expires or
    loses its tenant ends with `RUN_ERROR` whose `code` says which (`key_revoked`, `key_expired`,
    `tenant_deleted`); the run goes on.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        name (str):
        body (RunAgentInput): The input of an AG-UI run (`RunAgentInput`). Fields the server does
            not use are accepted.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AgUiEvent | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunAgentInput,
) -> AgUiEvent | Problem | None:
    """Run a published crew as an AG-UI agent.

     The answer is `text/event-stream`: one AG-UI event per message. Refusals before the stream
    opens are problems (404 unknown or unpublished crew, 409 a thread busy with another run,
    422 bad input or a resume naming no open interrupt). A stream whose key is revoked, expires or
    loses its tenant ends with `RUN_ERROR` whose `code` says which (`key_revoked`, `key_expired`,
    `tenant_deleted`); the run goes on.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        name (str):
        body (RunAgentInput): The input of an AG-UI run (`RunAgentInput`). Fields the server does
            not use are accepted.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AgUiEvent | Problem
    """

    return sync_detailed(
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunAgentInput,
) -> Response[AgUiEvent | Problem]:
    """Run a published crew as an AG-UI agent.

     The answer is `text/event-stream`: one AG-UI event per message. Refusals before the stream
    opens are problems (404 unknown or unpublished crew, 409 a thread busy with another run,
    422 bad input or a resume naming no open interrupt). A stream whose key is revoked, expires or
    loses its tenant ends with `RUN_ERROR` whose `code` says which (`key_revoked`, `key_expired`,
    `tenant_deleted`); the run goes on.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        name (str):
        body (RunAgentInput): The input of an AG-UI run (`RunAgentInput`). Fields the server does
            not use are accepted.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AgUiEvent | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: RunAgentInput,
) -> AgUiEvent | Problem | None:
    """Run a published crew as an AG-UI agent.

     The answer is `text/event-stream`: one AG-UI event per message. Refusals before the stream
    opens are problems (404 unknown or unpublished crew, 409 a thread busy with another run,
    422 bad input or a resume naming no open interrupt). A stream whose key is revoked, expires or
    loses its tenant ends with `RUN_ERROR` whose `code` says which (`key_revoked`, `key_expired`,
    `tenant_deleted`); the run goes on.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        name (str):
        body (RunAgentInput): The input of an AG-UI run (`RunAgentInput`). Fields the server does
            not use are accepted.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AgUiEvent | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
