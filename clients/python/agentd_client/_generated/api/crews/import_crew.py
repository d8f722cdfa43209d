from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.crew_import import CrewImport
from ...models.imported_crew import ImportedCrew
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: CrewImport,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/crews:import",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> ImportedCrew | Problem | None:
    if response.status_code == 200:
        response_200 = ImportedCrew.from_dict(response.json())

        return response_200

    if response.status_code == 201:
        response_201 = ImportedCrew.from_dict(response.json())

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
) -> Response[ImportedCrew | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CrewImport,
) -> Response[ImportedCrew | Problem]:
    """Import a CrewAI project as a crew.

     Takes the project's `config/agents.yaml` and `config/tasks.yaml` as text, with a mapping for
    what only its `crew.py` says, and stores the crew (replacing any crew of that name). The
    answer lists, as warnings, every field of the project the crew does not honour. The crew's
    `inputs_schema` declares each `{placeholder}` of the YAML as a required string unless the
    mapping gives one. See docs/guides/moving-a-crewai-project.md.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        body (CrewImport): A CrewAI project to store as a crew (`POST /v1/crews:import`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ImportedCrew | Problem]
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
    body: CrewImport,
) -> ImportedCrew | Problem | None:
    """Import a CrewAI project as a crew.

     Takes the project's `config/agents.yaml` and `config/tasks.yaml` as text, with a mapping for
    what only its `crew.py` says, and stores the crew (replacing any crew of that name). The
    answer lists, as warnings, every field of the project the crew does not honour. The crew's
    `inputs_schema` declares each `{placeholder}` of the YAML as a required string unless the
    mapping gives one. See docs/guides/moving-a-crewai-project.md.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        body (CrewImport): A CrewAI project to store as a crew (`POST /v1/crews:import`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ImportedCrew | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: CrewImport,
) -> Response[ImportedCrew | Problem]:
    """Import a CrewAI project as a crew.

     Takes the project's `config/agents.yaml` and `config/tasks.yaml` as text, with a mapping for
    what only its `crew.py` says, and stores the crew (replacing any crew of that name). The
    answer lists, as warnings, every field of the project the crew does not honour. The crew's
    `inputs_schema` declares each `{placeholder}` of the YAML as a required string unless the
    mapping gives one. See docs/guides/moving-a-crewai-project.md.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        body (CrewImport): A CrewAI project to store as a crew (`POST /v1/crews:import`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ImportedCrew | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: CrewImport,
) -> ImportedCrew | Problem | None:
    """Import a CrewAI project as a crew.

     Takes the project's `config/agents.yaml` and `config/tasks.yaml` as text, with a mapping for
    what only its `crew.py` says, and stores the crew (replacing any crew of that name). The
    answer lists, as warnings, every field of the project the crew does not honour. The crew's
    `inputs_schema` declares each `{placeholder}` of the YAML as a required string unless the
    mapping gives one. See docs/guides/moving-a-crewai-project.md.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        body (CrewImport): A CrewAI project to store as a crew (`POST /v1/crews:import`).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ImportedCrew | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
