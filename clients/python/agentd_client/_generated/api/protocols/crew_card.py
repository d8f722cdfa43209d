from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.crew_card_response_200 import CrewCardResponse200
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    name: str,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/a2a/{name}/.well-known/agent-card.json".format(
            name=quote(str(name), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | CrewCardResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = CrewCardResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 304:
        response_304 = cast(Any, None)
        return response_304

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
) -> Response[Any | CrewCardResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | CrewCardResponse200 | Problem]:
    """A published crew's A2A agent card.

     Open to anyone. With a key (or on a server without keys) it is the crew's own card (404 when
    the key's tenant publishes no crew of that name through A2A); without one, a public card that
    is the same for every name (it names no tenant's crew) and says how to authenticate. Cacheable:
    `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current copy.

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CrewCardResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient,
) -> Any | CrewCardResponse200 | Problem | None:
    """A published crew's A2A agent card.

     Open to anyone. With a key (or on a server without keys) it is the crew's own card (404 when
    the key's tenant publishes no crew of that name through A2A); without one, a public card that
    is the same for every name (it names no tenant's crew) and says how to authenticate. Cacheable:
    `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current copy.

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CrewCardResponse200 | Problem
    """

    return sync_detailed(
        name=name,
        client=client,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient,
) -> Response[Any | CrewCardResponse200 | Problem]:
    """A published crew's A2A agent card.

     Open to anyone. With a key (or on a server without keys) it is the crew's own card (404 when
    the key's tenant publishes no crew of that name through A2A); without one, a public card that
    is the same for every name (it names no tenant's crew) and says how to authenticate. Cacheable:
    `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current copy.

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | CrewCardResponse200 | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient,
) -> Any | CrewCardResponse200 | Problem | None:
    """A published crew's A2A agent card.

     Open to anyone. With a key (or on a server without keys) it is the crew's own card (404 when
    the key's tenant publishes no crew of that name through A2A); without one, a public card that
    is the same for every name (it names no tenant's crew) and says how to authenticate. Cacheable:
    `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current copy.

    Args:
        name (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | CrewCardResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
        )
    ).parsed
