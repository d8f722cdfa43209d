from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.document_source import DocumentSource
from ..models.document_status import DocumentStatus
from ..types import UNSET, Unset

T = TypeVar("T", bound="DocumentBody")


@_attrs_define
class DocumentBody:
    """A document of a knowledge base.

    Attributes:
        bytes_ (int): Bytes posted or uploaded (0 for a URL).
        chunks (int): Chunks indexed (`status: ready`).
        created_at (datetime.datetime):
        id (UUID):
        media_type (str): Its media type (`text/markdown` for posted text; a URL's once fetched is not recorded).
        source (DocumentSource): How a document was given.
        status (DocumentStatus): Where a document is in its ingestion.
        title (str):
        tokens (int): Tokens of those chunks (cl100k).
        updated_at (datetime.datetime):
        error (None | str | Unset): Why ingestion failed (`status: failed`).
        url (None | str | Unset): The URL it was fetched from (`source: url`).
    """

    bytes_: int
    chunks: int
    created_at: datetime.datetime
    id: UUID
    media_type: str
    source: DocumentSource
    status: DocumentStatus
    title: str
    tokens: int
    updated_at: datetime.datetime
    error: None | str | Unset = UNSET
    url: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        bytes_ = self.bytes_

        chunks = self.chunks

        created_at = self.created_at.isoformat()

        id = str(self.id)

        media_type = self.media_type

        source = self.source.value

        status = self.status.value

        title = self.title

        tokens = self.tokens

        updated_at = self.updated_at.isoformat()

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        url: None | str | Unset
        if isinstance(self.url, Unset):
            url = UNSET
        else:
            url = self.url

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "bytes": bytes_,
                "chunks": chunks,
                "created_at": created_at,
                "id": id,
                "media_type": media_type,
                "source": source,
                "status": status,
                "title": title,
                "tokens": tokens,
                "updated_at": updated_at,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if url is not UNSET:
            field_dict["url"] = url

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        bytes_ = d.pop("bytes")

        chunks = d.pop("chunks")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = UUID(d.pop("id"))

        media_type = d.pop("media_type")

        source = DocumentSource(d.pop("source"))

        status = DocumentStatus(d.pop("status"))

        title = d.pop("title")

        tokens = d.pop("tokens")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_url(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        url = _parse_url(d.pop("url", UNSET))

        document_body = cls(
            bytes_=bytes_,
            chunks=chunks,
            created_at=created_at,
            id=id,
            media_type=media_type,
            source=source,
            status=status,
            title=title,
            tokens=tokens,
            updated_at=updated_at,
            error=error,
            url=url,
        )

        document_body.additional_properties = d
        return document_body

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
