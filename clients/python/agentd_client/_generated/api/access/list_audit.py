import datetime
from http import HTTPStatus
from typing import Any
from uuid import UUID

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.audit_list import AuditList
from ...models.audit_outcome import AuditOutcome
from ...models.problem import Problem
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    tenant: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: AuditOutcome | Unset = UNSET,
    key_id: UUID | Unset = UNSET,
    resource: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["tenant"] = tenant

    params["action"] = action

    json_outcome: str | Unset = UNSET
    if not isinstance(outcome, Unset):
        json_outcome = outcome.value

    params["outcome"] = json_outcome

    json_key_id: str | Unset = UNSET
    if not isinstance(key_id, Unset):
        json_key_id = str(key_id)
    params["key_id"] = json_key_id

    params["resource"] = resource

    json_since: str | Unset = UNSET
    if not isinstance(since, Unset):
        json_since = since.isoformat()
    params["since"] = json_since

    json_until: str | Unset = UNSET
    if not isinstance(until, Unset):
        json_until = until.isoformat()
    params["until"] = json_until

    params["limit"] = limit

    json_cursor: str | Unset = UNSET
    if not isinstance(cursor, Unset):
        json_cursor = str(cursor)
    params["cursor"] = json_cursor

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/audit",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> AuditList | Problem | None:
    if response.status_code == 200:
        response_200 = AuditList.from_dict(response.json())

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
) -> Response[AuditList | Problem]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    tenant: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: AuditOutcome | Unset = UNSET,
    key_id: UUID | Unset = UNSET,
    resource: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> Response[AuditList | Problem]:
    """The audit log: changes made through the API (keys, tenants, secrets, webhooks, crews, run
    cancellations, deletions, approvals and resumptions), refused ones included.

     Needs a key with the `manage` scope (or `admin`).

    Args:
        tenant (str | Unset):
        action (str | Unset):
        outcome (AuditOutcome | Unset): How an audited request ended.
        key_id (UUID | Unset):
        resource (str | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditList | Problem]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        action=action,
        outcome=outcome,
        key_id=key_id,
        resource=resource,
        since=since,
        until=until,
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
    tenant: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: AuditOutcome | Unset = UNSET,
    key_id: UUID | Unset = UNSET,
    resource: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> AuditList | Problem | None:
    """The audit log: changes made through the API (keys, tenants, secrets, webhooks, crews, run
    cancellations, deletions, approvals and resumptions), refused ones included.

     Needs a key with the `manage` scope (or `admin`).

    Args:
        tenant (str | Unset):
        action (str | Unset):
        outcome (AuditOutcome | Unset): How an audited request ended.
        key_id (UUID | Unset):
        resource (str | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditList | Problem
    """

    return sync_detailed(
        client=client,
        tenant=tenant,
        action=action,
        outcome=outcome,
        key_id=key_id,
        resource=resource,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    tenant: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: AuditOutcome | Unset = UNSET,
    key_id: UUID | Unset = UNSET,
    resource: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> Response[AuditList | Problem]:
    """The audit log: changes made through the API (keys, tenants, secrets, webhooks, crews, run
    cancellations, deletions, approvals and resumptions), refused ones included.

     Needs a key with the `manage` scope (or `admin`).

    Args:
        tenant (str | Unset):
        action (str | Unset):
        outcome (AuditOutcome | Unset): How an audited request ended.
        key_id (UUID | Unset):
        resource (str | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditList | Problem]
    """

    kwargs = _get_kwargs(
        tenant=tenant,
        action=action,
        outcome=outcome,
        key_id=key_id,
        resource=resource,
        since=since,
        until=until,
        limit=limit,
        cursor=cursor,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    tenant: str | Unset = UNSET,
    action: str | Unset = UNSET,
    outcome: AuditOutcome | Unset = UNSET,
    key_id: UUID | Unset = UNSET,
    resource: str | Unset = UNSET,
    since: datetime.datetime | Unset = UNSET,
    until: datetime.datetime | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: UUID | Unset = UNSET,
) -> AuditList | Problem | None:
    """The audit log: changes made through the API (keys, tenants, secrets, webhooks, crews, run
    cancellations, deletions, approvals and resumptions), refused ones included.

     Needs a key with the `manage` scope (or `admin`).

    Args:
        tenant (str | Unset):
        action (str | Unset):
        outcome (AuditOutcome | Unset): How an audited request ended.
        key_id (UUID | Unset):
        resource (str | Unset):
        since (datetime.datetime | Unset):
        until (datetime.datetime | Unset):
        limit (int | Unset):
        cursor (UUID | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditList | Problem
    """

    return (
        await asyncio_detailed(
            client=client,
            tenant=tenant,
            action=action,
            outcome=outcome,
            key_id=key_id,
            resource=resource,
            since=since,
            until=until,
            limit=limit,
            cursor=cursor,
        )
    ).parsed
