from http import HTTPStatus
from typing import Any

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.evaluation_body import EvaluationBody
from ...models.evaluation_request import EvaluationRequest
from ...models.problem import Problem
from ...types import Response


def _get_kwargs(
    *,
    body: EvaluationRequest,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/evaluations",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> EvaluationBody | Problem | None:
    if response.status_code == 202:
        response_202 = EvaluationBody.from_dict(response.json())

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

    if response.status_code == 404:
        response_404 = Problem.from_dict(response.json())

        return response_404

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

    if response.status_code == 429:
        response_429 = Problem.from_dict(response.json())

        return response_429

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[EvaluationBody | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: EvaluationRequest,
) -> Response[EvaluationBody | Problem]:
    """Start an evaluation: the crew's version named by `crew` runs each case of the dataset (or of
    `runs`) as an ordinary run (tenant-fair, under the tenant's quotas, durable, streamed, traced).

     Mode `replay`: each case's tool calls are answered from its recorded run where tool and
    arguments match; a call that matches none is not executed (a divergence, in the report) unless
    the tool is in `safe_tools`. Model calls go to the version's models. Mode `live`: everything
    real. A case whose expectations have a `rubric` is judged in its run, before it completes, by
    `judge_model` (else the default model): the call is journaled and costed with the run's, and
    its verdict is the event `evaluation.judged` and the case's `rubric` check. Each case's run has
    `metadata` `{"evaluation_id", "case"}`.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        body (EvaluationRequest): The body of `POST /v1/evaluations`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EvaluationBody | Problem]
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
    body: EvaluationRequest,
) -> EvaluationBody | Problem | None:
    """Start an evaluation: the crew's version named by `crew` runs each case of the dataset (or of
    `runs`) as an ordinary run (tenant-fair, under the tenant's quotas, durable, streamed, traced).

     Mode `replay`: each case's tool calls are answered from its recorded run where tool and
    arguments match; a call that matches none is not executed (a divergence, in the report) unless
    the tool is in `safe_tools`. Model calls go to the version's models. Mode `live`: everything
    real. A case whose expectations have a `rubric` is judged in its run, before it completes, by
    `judge_model` (else the default model): the call is journaled and costed with the run's, and
    its verdict is the event `evaluation.judged` and the case's `rubric` check. Each case's run has
    `metadata` `{"evaluation_id", "case"}`.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        body (EvaluationRequest): The body of `POST /v1/evaluations`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EvaluationBody | Problem
    """

    return sync_detailed(
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: EvaluationRequest,
) -> Response[EvaluationBody | Problem]:
    """Start an evaluation: the crew's version named by `crew` runs each case of the dataset (or of
    `runs`) as an ordinary run (tenant-fair, under the tenant's quotas, durable, streamed, traced).

     Mode `replay`: each case's tool calls are answered from its recorded run where tool and
    arguments match; a call that matches none is not executed (a divergence, in the report) unless
    the tool is in `safe_tools`. Model calls go to the version's models. Mode `live`: everything
    real. A case whose expectations have a `rubric` is judged in its run, before it completes, by
    `judge_model` (else the default model): the call is journaled and costed with the run's, and
    its verdict is the event `evaluation.judged` and the case's `rubric` check. Each case's run has
    `metadata` `{"evaluation_id", "case"}`.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        body (EvaluationRequest): The body of `POST /v1/evaluations`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[EvaluationBody | Problem]
    """

    kwargs = _get_kwargs(
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: EvaluationRequest,
) -> EvaluationBody | Problem | None:
    """Start an evaluation: the crew's version named by `crew` runs each case of the dataset (or of
    `runs`) as an ordinary run (tenant-fair, under the tenant's quotas, durable, streamed, traced).

     Mode `replay`: each case's tool calls are answered from its recorded run where tool and
    arguments match; a call that matches none is not executed (a divergence, in the report) unless
    the tool is in `safe_tools`. Model calls go to the version's models. Mode `live`: everything
    real. A case whose expectations have a `rubric` is judged in its run, before it completes, by
    `judge_model` (else the default model): the call is journaled and costed with the run's, and
    its verdict is the event `evaluation.judged` and the case's `rubric` check. Each case's run has
    `metadata` `{"evaluation_id", "case"}`.

    Needs a key with the `kickoff` scope (or `admin`).

    Args:
        body (EvaluationRequest): The body of `POST /v1/evaluations`.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        EvaluationBody | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            body=body,
        )
    ).parsed
