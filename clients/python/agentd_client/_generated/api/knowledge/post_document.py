from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import httpx

from ... import errors
from ...client import AuthenticatedClient, Client
from ...models.document_body import DocumentBody
from ...models.new_document_json import NewDocumentJson
from ...models.new_document_upload import NewDocumentUpload
from ...models.problem import Problem
from ...types import UNSET, Response


def _get_kwargs(
    name: str,
    *,
    body: NewDocumentJson | NewDocumentUpload | Unset = UNSET,
) -> dict[str, Any]:
    headers: dict[str, Any] = {}

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/knowledge/{name}/documents".format(
            name=quote(str(name), safe=""),
        ),
    }

    if isinstance(body, NewDocumentJson):
        _kwargs["json"] = body.to_dict()

        headers["Content-Type"] = "application/json"
    if isinstance(body, NewDocumentUpload):
        _kwargs["files"] = body.to_multipart()

        headers["Content-Type"] = "multipart/form-data; boundary=+++"

    _kwargs["headers"] = headers
    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> DocumentBody | Problem | None:
    if response.status_code == 200:
        response_200 = DocumentBody.from_dict(response.json())

        return response_200

    if response.status_code == 202:
        response_202 = DocumentBody.from_dict(response.json())

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

    if response.status_code == 503:
        response_503 = Problem.from_dict(response.json())

        return response_503

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[DocumentBody | Problem]:
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
    body: NewDocumentJson | NewDocumentUpload | Unset = UNSET,
) -> Response[DocumentBody | Problem]:
    """Add a document to a knowledge base.

     Answered at once with the document `pending`; ingestion (fetch, extract, chunk, index) runs in
    the background on any replica and survives a crash. The same content posted again (the same
    text or file, or the same URL) answers the existing document (200), queued again if it had
    failed.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        body (NewDocumentJson): A document given as JSON: its text, or a URL to fetch it from
            (through the egress guard,
            within the tools' size and time limits).
        body (NewDocumentUpload): A document uploaded as `multipart/form-data`: its parts `file`
            and `title`, no other (an
            unknown part is a 422).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DocumentBody | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: NewDocumentJson | NewDocumentUpload | Unset = UNSET,
) -> DocumentBody | Problem | None:
    """Add a document to a knowledge base.

     Answered at once with the document `pending`; ingestion (fetch, extract, chunk, index) runs in
    the background on any replica and survives a crash. The same content posted again (the same
    text or file, or the same URL) answers the existing document (200), queued again if it had
    failed.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        body (NewDocumentJson): A document given as JSON: its text, or a URL to fetch it from
            (through the egress guard,
            within the tools' size and time limits).
        body (NewDocumentUpload): A document uploaded as `multipart/form-data`: its parts `file`
            and `title`, no other (an
            unknown part is a 422).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DocumentBody | Problem
    """

    return sync_detailed(
        name=name,
        client=client,
        body=body,
    ).parsed


async def asyncio_detailed(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: NewDocumentJson | NewDocumentUpload | Unset = UNSET,
) -> Response[DocumentBody | Problem]:
    """Add a document to a knowledge base.

     Answered at once with the document `pending`; ingestion (fetch, extract, chunk, index) runs in
    the background on any replica and survives a crash. The same content posted again (the same
    text or file, or the same URL) answers the existing document (200), queued again if it had
    failed.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        body (NewDocumentJson): A document given as JSON: its text, or a URL to fetch it from
            (through the egress guard,
            within the tools' size and time limits).
        body (NewDocumentUpload): A document uploaded as `multipart/form-data`: its parts `file`
            and `title`, no other (an
            unknown part is a 422).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[DocumentBody | Problem]
    """

    kwargs = _get_kwargs(
        name=name,
        body=body,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    name: str,
    *,
    client: AuthenticatedClient | Client,
    body: NewDocumentJson | NewDocumentUpload | Unset = UNSET,
) -> DocumentBody | Problem | None:
    """Add a document to a knowledge base.

     Answered at once with the document `pending`; ingestion (fetch, extract, chunk, index) runs in
    the background on any replica and survives a crash. The same content posted again (the same
    text or file, or the same URL) answers the existing document (200), queued again if it had
    failed.

    Needs a key with the `manage` scope (or `admin`).

    Args:
        name (str):
        body (NewDocumentJson): A document given as JSON: its text, or a URL to fetch it from
            (through the egress guard,
            within the tools' size and time limits).
        body (NewDocumentUpload): A document uploaded as `multipart/form-data`: its parts `file`
            and `title`, no other (an
            unknown part is a 422).

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        DocumentBody | Problem
    """

    return (
        await asyncio_detailed(
            name=name,
            client=client,
            body=body,
        )
    ).parsed
