from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.alias_body import AliasBody
from ...models.alias_move_body import AliasMoveBody
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
    alias: str,
    *,
    body: AliasMoveBody,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "put",
        "url": "/v1/crews/{name}/aliases/{alias}".format(
            name=quote(str(name), safe=""),
            alias=quote(str(alias), safe=""),
        ),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AliasBody | Problem | None:
    if response.status_code == 200:
        response_200 = AliasBody.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = AliasBody.from_dict(response.json())

        return response_201

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
) -> Response[AliasBody | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    alias: str,
    *,
    client: AuthenticatedClient | Client,
    body: AliasMoveBody,
) -> Response[AliasBody | Problem]:
    """Point an alias at a version of the crew (create it, or move it).

     The move is one transaction: a kickoff naming `name@alias` (or the crew alone, for
    `production`) runs the version before or the version after, never anything else. Rolling
    back is moving the alias back.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        alias (str):
        body (AliasMoveBody): The body of `PUT /v1/crews/{name}/aliases/{alias}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AliasBody | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        alias=alias,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    alias: str,
    *,
    client: AuthenticatedClient | Client,
    body: AliasMoveBody,
) -> AliasBody | Problem | None:
    """Point an alias at a version of the crew (create it, or move it).

     The move is one transaction: a kickoff naming `name@alias` (or the crew alone, for
    `production`) runs the version before or the version after, never anything else. Rolling
    back is moving the alias back.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        alias (str):
        body (AliasMoveBody): The body of `PUT /v1/crews/{name}/aliases/{alias}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AliasBody | Problem
    """

    return sync_detailed(
        name=name,
        alias=alias,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    alias: str,
    *,
    client: AuthenticatedClient | Client,
    body: AliasMoveBody,
) -> Response[AliasBody | Problem]:
    """Point an alias at a version of the crew (create it, or move it).

     The move is one transaction: a kickoff naming `name@alias` (or the crew alone, for
    `production`) runs the version before or the version after, never anything else. Rolling
    back is moving the alias back.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        alias (str):
        body (AliasMoveBody): The body of `PUT /v1/crews/{name}/aliases/{alias}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AliasBody | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        alias=alias,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    alias: str,
    *,
    client: AuthenticatedClient | Client,
    body: AliasMoveBody,
) -> AliasBody | Problem | None:
    """Point an alias at a version of the crew (create it, or move it).

     The move is one transaction: a kickoff naming `name@alias` (or the crew alone, for
    `production`) runs the version before or the version after, never anything else. Rolling
    back is moving the alias back.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        alias (str):
        body (AliasMoveBody): The body of `PUT /v1/crews/{name}/aliases/{alias}`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AliasBody | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            alias=alias,
            client=client,
            body=body,
        )
    ).parsed
