from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    id: UUID,
    *,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = str(last_event_id)

    params: dict[str, Any] = {}

    params["after"] = after

    params["limit"] = limit

    params["access_token"] = access_token

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/runs/{id}/events".format(
            id=quote(str(id), safe=""),
        ),
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | Problem | None:
    if response.status_code == 204:
        response_204 = cast(Any, None)
        return response_204

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

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Any | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Response[Any | Problem]:
    """A run's events in `seq` order: a JSON page, or with `Accept: text/event-stream` a live stream.

     The stream replays the events after `Last-Event-ID` (or `?after=`), then follows the run live,
    and ends after its terminal event; `id:` is the `seq`, `event:` the type, `data:` the envelope.
    When the stored key it was opened with is revoked, expires or loses its tenant, it ends within
    about a second with `event: stream.closed` (`data:` a `StreamClosed`) and nothing after it.
    A streaming run (`"stream": true`) also sends `event: llm.delta` messages live, without an
    `id:` (never journaled): `data:` is `{"run_id", "type": "llm.delta", "at", "task", "agent",
    "data": {"iteration", "attempt", "text"}}`.

    Needs a key with the `read` scope (or `admin`).

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        limit=limit,
        access_token=access_token,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Any | Problem | None:
    """A run's events in `seq` order: a JSON page, or with `Accept: text/event-stream` a live stream.

     The stream replays the events after `Last-Event-ID` (or `?after=`), then follows the run live,
    and ends after its terminal event; `id:` is the `seq`, `event:` the type, `data:` the envelope.
    When the stored key it was opened with is revoked, expires or loses its tenant, it ends within
    about a second with `event: stream.closed` (`data:` a `StreamClosed`) and nothing after it.
    A streaming run (`"stream": true`) also sends `event: llm.delta` messages live, without an
    `id:` (never journaled): `data:` is `{"run_id", "type": "llm.delta", "at", "task", "agent",
    "data": {"iteration", "attempt", "text"}}`.

    Needs a key with the `read` scope (or `admin`).

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return sync_detailed(
        id=id,
        client=client,
        after=after,
        limit=limit,
        access_token=access_token,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Response[Any | Problem]:
    """A run's events in `seq` order: a JSON page, or with `Accept: text/event-stream` a live stream.

     The stream replays the events after `Last-Event-ID` (or `?after=`), then follows the run live,
    and ends after its terminal event; `id:` is the `seq`, `event:` the type, `data:` the envelope.
    When the stored key it was opened with is revoked, expires or loses its tenant, it ends within
    about a second with `event: stream.closed` (`data:` a `StreamClosed`) and nothing after it.
    A streaming run (`"stream": true`) also sends `event: llm.delta` messages live, without an
    `id:` (never journaled): `data:` is `{"run_id", "type": "llm.delta", "at", "task", "agent",
    "data": {"iteration", "attempt", "text"}}`.

    Needs a key with the `read` scope (or `admin`).

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | Problem]
    """

    kwargs = _get_kwargs(
        id=id,
        after=after,
        limit=limit,
        access_token=access_token,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: UUID,
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    limit: int | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Any | Problem | None:
    """A run's events in `seq` order: a JSON page, or with `Accept: text/event-stream` a live stream.

     The stream replays the events after `Last-Event-ID` (or `?after=`), then follows the run live,
    and ends after its terminal event; `id:` is the `seq`, `event:` the type, `data:` the envelope.
    When the stored key it was opened with is revoked, expires or loses its tenant, it ends within
    about a second with `event: stream.closed` (`data:` a `StreamClosed`) and nothing after it.
    A streaming run (`"stream": true`) also sends `event: llm.delta` messages live, without an
    `id:` (never journaled): `data:` is `{"run_id", "type": "llm.delta", "at", "task", "agent",
    "data": {"iteration", "attempt", "text"}}`.

    Needs a key with the `read` scope (or `admin`).

    Args:
        id (UUID):
        after (int | Unset):
        limit (int | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | Problem
    """

    return (
        await asyncio_detailed(
            id=id,
            client=client,
            after=after,
            limit=limit,
            access_token=access_token,
            last_event_id=last_event_id,
        )
    ).parsed
