from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.sse_message import SseMessage
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    after: int | Unset = UNSET,
    from_now: bool | Unset = UNSET,
    crew: str | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if not isinstance(last_event_id, Unset):
        headers["Last-Event-ID"] = str(last_event_id)

    params: dict[str, Any] = {}

    params["after"] = after

    params["from_now"] = from_now

    params["crew"] = crew

    params["access_token"] = access_token

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/events",
        "params": params,
    }

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | SseMessage | None:
    if response.status_code == 200:
        response_200 = SseMessage.from_dict(response.text)

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

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | SseMessage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    from_now: bool | Unset = UNSET,
    crew: str | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Response[Problem | SseMessage]:
    """Every run's events, live (server-sent events); `id:` is the global event id.

     Replays from after `Last-Event-ID` (or `?after=`; by default from the start of the log, or with
    `from_now=true` from its end), then follows every run live. Ends with `event: stream.closed`
    when its key ends, as a run's stream does.

    Needs a key with the `read` scope (or `admin`).

    Args:
        after (int | Unset):
        from_now (bool | Unset):
        crew (str | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SseMessage]
    """

    kwargs = _get_kwargs(
        after=after,
        from_now=from_now,
        crew=crew,
        access_token=access_token,
        last_event_id=last_event_id,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    from_now: bool | Unset = UNSET,
    crew: str | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Problem | SseMessage | None:
    """Every run's events, live (server-sent events); `id:` is the global event id.

     Replays from after `Last-Event-ID` (or `?after=`; by default from the start of the log, or with
    `from_now=true` from its end), then follows every run live. Ends with `event: stream.closed`
    when its key ends, as a run's stream does.

    Needs a key with the `read` scope (or `admin`).

    Args:
        after (int | Unset):
        from_now (bool | Unset):
        crew (str | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SseMessage
    """

    return sync_detailed(
        client=client,
        after=after,
        from_now=from_now,
        crew=crew,
        access_token=access_token,
        last_event_id=last_event_id,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    from_now: bool | Unset = UNSET,
    crew: str | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Response[Problem | SseMessage]:
    """Every run's events, live (server-sent events); `id:` is the global event id.

     Replays from after `Last-Event-ID` (or `?after=`; by default from the start of the log, or with
    `from_now=true` from its end), then follows every run live. Ends with `event: stream.closed`
    when its key ends, as a run's stream does.

    Needs a key with the `read` scope (or `admin`).

    Args:
        after (int | Unset):
        from_now (bool | Unset):
        crew (str | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SseMessage]
    """

    kwargs = _get_kwargs(
        after=after,
        from_now=from_now,
        crew=crew,
        access_token=access_token,
        last_event_id=last_event_id,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    after: int | Unset = UNSET,
    from_now: bool | Unset = UNSET,
    crew: str | Unset = UNSET,
    access_token: str | Unset = UNSET,
    last_event_id: int | Unset = UNSET,
) -> Problem | SseMessage | None:
    """Every run's events, live (server-sent events); `id:` is the global event id.

     Replays from after `Last-Event-ID` (or `?after=`; by default from the start of the log, or with
    `from_now=true` from its end), then follows every run live. Ends with `event: stream.closed`
    when its key ends, as a run's stream does.

    Needs a key with the `read` scope (or `admin`).

    Args:
        after (int | Unset):
        from_now (bool | Unset):
        crew (str | Unset):
        access_token (str | Unset):
        last_event_id (int | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SseMessage
    """

    return (
        await asyncio_detailed(
            client=client,
            after=after,
            from_now=from_now,
            crew=crew,
            access_token=access_token,
            last_event_id=last_event_id,
        )
    ).parsed
