from http import HTTPStatus
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.approval_request import ApprovalRequest
from ...models.problem import Problem
from ...models.run import Run
from ...types import Response


def _get_kwargs(
    id: UUID,
    tool_call_id: str,
    *,
    body: ApprovalRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/runs/{id}/tool-calls/{tool_call_id}/approval".format(
            id=quote(str(id), safe=""),
            tool_call_id=quote(str(tool_call_id), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | Run | None:
    if response.status_code == 200:
        response_200 = Run.from_dict(response.json())

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

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | Run]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: UUID,
    tool_call_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ApprovalRequest,
) -> Response[Problem | Run]:
    """Decide on a tool call that awaits approval.

     A call of a tool that `requires_approval` is journaled, announced as
    `tool.approval_requested`, and waits while the run is `awaiting_input`. Approve it (with the
    model's arguments or edited ones) and it runs; reject it and the model is told why. When every
    waiting call of the run is decided the run is queued again. `tool_call_id` is the call's `id`
    (`GET /v1/runs/{id}/tool-calls`), percent-encoded in the path (`t%231%2Fcall_1`).

    Needs a key with the `approve` scope (or `admin`).

    Args:
        id (UUID):
        tool_call_id (str):
        body (ApprovalRequest): The body of a decision on a tool call that awaits approval.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        id=id,
        tool_call_id=tool_call_id,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    tool_call_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ApprovalRequest,
) -> Problem | Run | None:
    """Decide on a tool call that awaits approval.

     A call of a tool that `requires_approval` is journaled, announced as
    `tool.approval_requested`, and waits while the run is `awaiting_input`. Approve it (with the
    model's arguments or edited ones) and it runs; reject it and the model is told why. When every
    waiting call of the run is decided the run is queued again. `tool_call_id` is the call's `id`
    (`GET /v1/runs/{id}/tool-calls`), percent-encoded in the path (`t%231%2Fcall_1`).

    Needs a key with the `approve` scope (or `admin`).

    Args:
        id (UUID):
        tool_call_id (str):
        body (ApprovalRequest): The body of a decision on a tool call that awaits approval.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return sync_detailed(
        id=id,
        tool_call_id=tool_call_id,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    tool_call_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ApprovalRequest,
) -> Response[Problem | Run]:
    """Decide on a tool call that awaits approval.

     A call of a tool that `requires_approval` is journaled, announced as
    `tool.approval_requested`, and waits while the run is `awaiting_input`. Approve it (with the
    model's arguments or edited ones) and it runs; reject it and the model is told why. When every
    waiting call of the run is decided the run is queued again. `tool_call_id` is the call's `id`
    (`GET /v1/runs/{id}/tool-calls`), percent-encoded in the path (`t%231%2Fcall_1`).

    Needs a key with the `approve` scope (or `admin`).

    Args:
        id (UUID):
        tool_call_id (str):
        body (ApprovalRequest): The body of a decision on a tool call that awaits approval.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | Run]
    """

    kwargs = _get_kwargs(
        id=id,
        tool_call_id=tool_call_id,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    tool_call_id: str,
    *,
    client: AuthenticatedClient | Client,
    body: ApprovalRequest,
) -> Problem | Run | None:
    """Decide on a tool call that awaits approval.

     A call of a tool that `requires_approval` is journaled, announced as
    `tool.approval_requested`, and waits while the run is `awaiting_input`. Approve it (with the
    model's arguments or edited ones) and it runs; reject it and the model is told why. When every
    waiting call of the run is decided the run is queued again. `tool_call_id` is the call's `id`
    (`GET /v1/runs/{id}/tool-calls`), percent-encoded in the path (`t%231%2Fcall_1`).

    Needs a key with the `approve` scope (or `admin`).

    Args:
        id (UUID):
        tool_call_id (str):
        body (ApprovalRequest): The body of a decision on a tool call that awaits approval.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | Run
    """

    return (
        await asyncio_detailed(
            id=id,
            tool_call_id=tool_call_id,
            client=client,
            body=body,
        )
    ).parsed
