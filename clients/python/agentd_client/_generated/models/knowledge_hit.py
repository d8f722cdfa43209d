from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="KnowledgeHit")


@_attrs_define
class KnowledgeHit:
    """One chunk a search found.

    Attributes:
        chunk_id (UUID):
        document_id (UUID):
        score (float): Higher is better: the full-text rank, the cosine similarity, or the fused score (by
            `mode`); comparable within one search only.
        text (str):
        title (str): The document's title.
        heading (str | Unset): The headings the chunk sits under, e.g. `Install > Requirements` (may be empty).
    """

    chunk_id: UUID
    document_id: UUID
    score: float
    text: str
    title: str
    heading: str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        chunk_id = str(self.chunk_id)

        document_id = str(self.document_id)

        score = self.score

        text = self.text

        title = self.title

        heading = self.heading

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "chunk_id": chunk_id,
                "document_id": document_id,
                "score": score,
                "text": text,
                "title": title,
            }
        )
        if heading is not UNSET:
            field_dict["heading"] = heading

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        chunk_id = UUID(d.pop("chunk_id"))

        document_id = UUID(d.pop("document_id"))

        score = d.pop("score")

        text = d.pop("text")

        title = d.pop("title")

        heading = d.pop("heading", UNSET)

        knowledge_hit = cls(
            chunk_id=chunk_id,
            document_id=document_id,
            score=score,
            text=text,
            title=title,
            heading=heading,
        )

        knowledge_hit.additional_properties = d
        return knowledge_hit

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
