from http import HTTPStatus
from typing import Any, cast

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.discovery_card_response_200 import DiscoveryCardResponse200
from ...models.problem import Problem
from ...types import Response


def _get_kwargs() -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/.well-known/agent-card.json",
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Any | DiscoveryCardResponse200 | Problem | None:
    if response.status_code == 200:
        response_200 = DiscoveryCardResponse200.from_dict(response.json())

        return response_200

    if response.status_code == 304:
        response_304 = cast(Any, None)
        return response_304

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Any | DiscoveryCardResponse200 | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Any | DiscoveryCardResponse200 | Problem]:
    """agentd's A2A agent card.

     Open to anyone; with a key, its skills are the key's tenant's crews published through A2A
    (`publish.a2a`), and its endpoint (`POST /a2a`) runs the one a message names in
    `metadata.skill`. Cacheable: `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current
    copy.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | DiscoveryCardResponse200 | Problem]
    """

    kwargs = _get_kwargs()

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
) -> Any | DiscoveryCardResponse200 | Problem | None:
    """agentd's A2A agent card.

     Open to anyone; with a key, its skills are the key's tenant's crews published through A2A
    (`publish.a2a`), and its endpoint (`POST /a2a`) runs the one a message names in
    `metadata.skill`. Cacheable: `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current
    copy.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | DiscoveryCardResponse200 | Problem
    """

    return sync_detailed(
        client=client,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
) -> Response[Any | DiscoveryCardResponse200 | Problem]:
    """agentd's A2A agent card.

     Open to anyone; with a key, its skills are the key's tenant's crews published through A2A
    (`publish.a2a`), and its endpoint (`POST /a2a`) runs the one a message names in
    `metadata.skill`. Cacheable: `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current
    copy.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Any | DiscoveryCardResponse200 | Problem]
    """

    kwargs = _get_kwargs()

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
) -> Any | DiscoveryCardResponse200 | Problem | None:
    """agentd's A2A agent card.

     Open to anyone; with a key, its skills are the key's tenant's crews published through A2A
    (`publish.a2a`), and its endpoint (`POST /a2a`) runs the one a message names in
    `metadata.skill`. Cacheable: `ETag`, `Last-Modified`, `Cache-Control`; `304` for a current
    copy.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Any | DiscoveryCardResponse200 | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
        )
    ).parsed
