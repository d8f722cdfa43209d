from http import HTTPStatus
from typing import Any
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.thread_list import ThreadList
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    metadata: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["metadata"] = metadata

    params["limit"] = limit

    json_cursor: str | Unset = UNSET
    if not isinstance(cursor, Unset):
        json_cursor = str(cursor)
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/threads",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | ThreadList | None:
    if response.status_code == 200:
        response_200 = ThreadList.from_dict(response.json())

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
) -> Response[Problem | ThreadList]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    metadata: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> Response[Problem | ThreadList]:
    """The tenant's threads, newest first.

     Needs a key with the `read` scope (or `admin`).

    Args:
        metadata (str | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | ThreadList]
    """

    kwargs = _get_kwargs(
        metadata=metadata,
        limit=limit,
        cursor=cursor,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    metadata: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> Problem | ThreadList | None:
    """The tenant's threads, newest first.

     Needs a key with the `read` scope (or `admin`).

    Args:
        metadata (str | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | ThreadList
    """

    return sync_detailed(
        client=client,
        metadata=metadata,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    metadata: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> Response[Problem | ThreadList]:
    """The tenant's threads, newest first.

     Needs a key with the `read` scope (or `admin`).

    Args:
        metadata (str | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | ThreadList]
    """

    kwargs = _get_kwargs(
        metadata=metadata,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    metadata: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> Problem | ThreadList | None:
    """The tenant's threads, newest first.

     Needs a key with the `read` scope (or `admin`).

    Args:
        metadata (str | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | ThreadList
    """

    return (
        await asyncio_detailed(
            client=client,
            metadata=metadata,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
