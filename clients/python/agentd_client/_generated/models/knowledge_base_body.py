from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.chunking import Chunking


T = TypeVar("T", bound="KnowledgeBaseBody")


@_attrs_define
class KnowledgeBaseBody:
    """A knowledge base.

    Attributes:
        chunking (Chunking): How a base's documents are cut: at most `max_tokens` per chunk (cl100k tokens), the next
            chunk of a section repeating the last `overlap` tokens of the one before.
        chunks (int): Chunks of its ready documents.
        created_at (datetime.datetime):
        description (str):
        documents (int): Documents in any state.
        name (str):
        embedding (None | str | Unset): `<provider>/<model>` of its embedding model (`null`: full-text search only).
    """

    chunking: Chunking
    chunks: int
    created_at: datetime.datetime
    description: str
    documents: int
    name: str
    embedding: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        chunking = self.chunking.to_dict()

        chunks = self.chunks

        created_at = self.created_at.isoformat()

        description = self.description

        documents = self.documents

        name = self.name

        embedding: None | str | Unset
        if isinstance(self.embedding, Unset):
            embedding = UNSET
        else:
            embedding = self.embedding

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "chunking": chunking,
                "chunks": chunks,
                "created_at": created_at,
                "description": description,
                "documents": documents,
                "name": name,
            }
        )
        if embedding is not UNSET:
            field_dict["embedding"] = embedding

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.chunking import Chunking

        d = dict(src_dict)
        chunking = Chunking.from_dict(d.pop("chunking"))

        chunks = d.pop("chunks")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        description = d.pop("description")

        documents = d.pop("documents")

        name = d.pop("name")

        def _parse_embedding(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        embedding = _parse_embedding(d.pop("embedding", UNSET))

        knowledge_base_body = cls(
            chunking=chunking,
            chunks=chunks,
            created_at=created_at,
            description=description,
            documents=documents,
            name=name,
            embedding=embedding,
        )

        knowledge_base_body.additional_properties = d
        return knowledge_base_body

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
