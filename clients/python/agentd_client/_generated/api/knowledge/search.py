from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.problem import Problem
from ...models.search_mode import SearchMode
from ...models.search_result import SearchResult
from ...types import UNSET, Response, Unset


def _get_kwargs(
    name: str,
    *,
    q: str,
    k: int | Unset = UNSET,
    mode: SearchMode | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["q"] = q

    params["k"] = k

    json_mode: str | Unset = UNSET
    if not isinstance(mode, Unset):
        json_mode = mode.value

    params["mode"] = json_mode

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/knowledge/{name}/search".format(
            name=quote(str(name), safe=""),
        ),
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Problem | SearchResult | None:
    if response.status_code == 200:
        response_200 = SearchResult.from_dict(response.json())

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

    if response.status_code == 409:
        response_409 = Problem.from_dict(response.json())

        return response_409

    if response.status_code == 422:
        response_422 = Problem.from_dict(response.json())

        return response_422

    if response.status_code == 502:
        response_502 = Problem.from_dict(response.json())

        return response_502

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Problem | SearchResult]:
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
    q: str,
    k: int | Unset = UNSET,
    mode: SearchMode | Unset = UNSET,
) -> Response[Problem | SearchResult]:
    """Search a knowledge base as a crew's task would (its prompt as `q`): what the crew will see.

     Needs a key with the `read` scope (or `admin`).

    Args:
        name (str):
        q (str):
        k (int | Unset):
        mode (SearchMode | Unset): How a search ranked its hits.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SearchResult]
    """

    kwargs = _get_kwargs(
        name=name,
        q=q,
        k=k,
        mode=mode,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    q: str,
    k: int | Unset = UNSET,
    mode: SearchMode | Unset = UNSET,
) -> Problem | SearchResult | None:
    """Search a knowledge base as a crew's task would (its prompt as `q`): what the crew will see.

     Needs a key with the `read` scope (or `admin`).

    Args:
        name (str):
        q (str):
        k (int | Unset):
        mode (SearchMode | Unset): How a search ranked its hits.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SearchResult
    """

    return sync_detailed(
        name=name,
        client=client,
        q=q,
        k=k,
        mode=mode,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    q: str,
    k: int | Unset = UNSET,
    mode: SearchMode | Unset = UNSET,
) -> Response[Problem | SearchResult]:
    """Search a knowledge base as a crew's task would (its prompt as `q`): what the crew will see.

     Needs a key with the `read` scope (or `admin`).

    Args:
        name (str):
        q (str):
        k (int | Unset):
        mode (SearchMode | Unset): How a search ranked its hits.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Problem | SearchResult]
    """

    kwargs = _get_kwargs(
        name=name,
        q=q,
        k=k,
        mode=mode,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    q: str,
    k: int | Unset = UNSET,
    mode: SearchMode | Unset = UNSET,
) -> Problem | SearchResult | None:
    """Search a knowledge base as a crew's task would (its prompt as `q`): what the crew will see.

     Needs a key with the `read` scope (or `admin`).

    Args:
        name (str):
        q (str):
        k (int | Unset):
        mode (SearchMode | Unset): How a search ranked its hits.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Problem | SearchResult
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            q=q,
            k=k,
            mode=mode,
        )
    ).parsed
