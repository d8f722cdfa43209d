from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.dataset_body import DatasetBody
from ...models.dataset_request import DatasetRequest
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: DatasetRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/datasets",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DatasetBody | Problem | None:
    if response.status_code == 201:
        response_201 = DatasetBody.from_dict(response.json())

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

    if response.status_code == 408:
        response_408 = Problem.from_dict(response.json())

        return response_408

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
) -> Response[DatasetBody | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: DatasetRequest,
) -> Response[DatasetBody | Problem]:
    """Store a dataset: cases given (inputs and expectations), or made from past runs (`from_runs`:
    each run's inputs, and as reference its id and output, which a replay answers tool calls from).

     Needs a key with the `manage` scope (or `admin`).

    Args:
        body (DatasetRequest): The body of `POST /v1/datasets`: cases given, or made from past
            runs.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DatasetBody | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient | Client,
    body: DatasetRequest,
) -> DatasetBody | Problem | None:
    """Store a dataset: cases given (inputs and expectations), or made from past runs (`from_runs`:
    each run's inputs, and as reference its id and output, which a replay answers tool calls from).

     Needs a key with the `manage` scope (or `admin`).

    Args:
        body (DatasetRequest): The body of `POST /v1/datasets`: cases given, or made from past
            runs.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DatasetBody | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: DatasetRequest,
) -> Response[DatasetBody | Problem]:
    """Store a dataset: cases given (inputs and expectations), or made from past runs (`from_runs`:
    each run's inputs, and as reference its id and output, which a replay answers tool calls from).

     Needs a key with the `manage` scope (or `admin`).

    Args:
        body (DatasetRequest): The body of `POST /v1/datasets`: cases given, or made from past
            runs.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DatasetBody | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: DatasetRequest,
) -> DatasetBody | Problem | None:
    """Store a dataset: cases given (inputs and expectations), or made from past runs (`from_runs`:
    each run's inputs, and as reference its id and output, which a replay answers tool calls from).

     Needs a key with the `manage` scope (or `admin`).

    Args:
        body (DatasetRequest): The body of `POST /v1/datasets`: cases given, or made from past
            runs.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DatasetBody | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
