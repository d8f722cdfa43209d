from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.json_rpc_message import JsonRpcMessage
from ...models.json_rpc_response import JsonRpcResponse
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
    *,
    body: JsonRpcMessage,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/a2a/{name}/".format(
            name=quote(str(name), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | JsonRpcResponse | Problem | None:
    if response.status_code == 200:
        response_200 = JsonRpcResponse.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = cast(Any, None)
        return response_202

    if response.status_code == 400:
        response_400 = Problem.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Problem.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Problem.from_dict(response.json())

        return response_403

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())

        return response_408

    if response.status_code == 413:
        response_413 = Problem.from_dict(response.json())

        return response_413

    if response.status_code == 415:
        response_415 = Problem.from_dict(response.json())

        return response_415

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Any | JsonRpcResponse | Problem]:
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
    body: JsonRpcMessage,
) -> Response[Any | JsonRpcResponse | Problem]:
    """As `POST /a2a/{name}` (the URL with a trailing slash)

     `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`,
    `SubscribeToTask` and the push notification config methods; errors are JSON-RPC errors with
    HTTP 200, as A2A clients read them (a stream whose key ends: -32050 with `data.reason`). See
    docs/guides/protocols.md.

    Args:
        name (str):
        body (JsonRpcMessage): A JSON-RPC 2.0 message as a client sends it (the OpenAPI document's
            view: the methods and
            their params are the protocol's).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | JsonRpcResponse | Problem]
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
    body: JsonRpcMessage,
) -> Any | JsonRpcResponse | Problem | None:
    """As `POST /a2a/{name}` (the URL with a trailing slash)

     `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`,
    `SubscribeToTask` and the push notification config methods; errors are JSON-RPC errors with
    HTTP 200, as A2A clients read them (a stream whose key ends: -32050 with `data.reason`). See
    docs/guides/protocols.md.

    Args:
        name (str):
        body (JsonRpcMessage): A JSON-RPC 2.0 message as a client sends it (the OpenAPI document's
            view: the methods and
            their params are the protocol's).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | JsonRpcResponse | Problem
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
    body: JsonRpcMessage,
) -> Response[Any | JsonRpcResponse | Problem]:
    """As `POST /a2a/{name}` (the URL with a trailing slash)

     `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`,
    `SubscribeToTask` and the push notification config methods; errors are JSON-RPC errors with
    HTTP 200, as A2A clients read them (a stream whose key ends: -32050 with `data.reason`). See
    docs/guides/protocols.md.

    Args:
        name (str):
        body (JsonRpcMessage): A JSON-RPC 2.0 message as a client sends it (the OpenAPI document's
            view: the methods and
            their params are the protocol's).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | JsonRpcResponse | Problem]
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
    body: JsonRpcMessage,
) -> Any | JsonRpcResponse | Problem | None:
    """As `POST /a2a/{name}` (the URL with a trailing slash)

     `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`,
    `SubscribeToTask` and the push notification config methods; errors are JSON-RPC errors with
    HTTP 200, as A2A clients read them (a stream whose key ends: -32050 with `data.reason`). See
    docs/guides/protocols.md.

    Args:
        name (str):
        body (JsonRpcMessage): A JSON-RPC 2.0 message as a client sends it (the OpenAPI document's
            view: the methods and
            their params are the protocol's).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | JsonRpcResponse | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
