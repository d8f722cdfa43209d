from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.retrieved_chunk import RetrievedChunk


T = TypeVar("T", bound="KnowledgeRetrieved")


@_attrs_define
class KnowledgeRetrieved:
    """What one knowledge base gave a task's prompt.

    Attributes:
        base (str):
        hits (list[RetrievedChunk]): Best first (none: the base had nothing for the prompt).
        task (str):
    """

    base: str
    hits: list[RetrievedChunk]
    task: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        base = self.base

        hits = []
        for hits_item_data in self.hits:
            hits_item = hits_item_data.to_dict()
            hits.append(hits_item)

        task = self.task

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "base": base,
                "hits": hits,
                "task": task,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.retrieved_chunk import RetrievedChunk

        d = dict(src_dict)
        base = d.pop("base")

        hits = []
        _hits = d.pop("hits")
        for hits_item_data in _hits:
            hits_item = RetrievedChunk.from_dict(hits_item_data)

            hits.append(hits_item)

        task = d.pop("task")

        knowledge_retrieved = cls(
            base=base,
            hits=hits,
            task=task,
        )

        knowledge_retrieved.additional_properties = d
        return knowledge_retrieved

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
