from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.recalled_memory import RecalledMemory


T = TypeVar("T", bound="MemoryRetrieved")


@_attrs_define
class MemoryRetrieved:
    """What a memory scope gave a task's prompt.

    Attributes:
        memories (list[RecalledMemory]): Most relevant first (none: the scope holds nothing from earlier runs).
        scope (str):
        task (str):
    """

    memories: list[RecalledMemory]
    scope: str
    task: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        memories = []
        for memories_item_data in self.memories:
            memories_item = memories_item_data.to_dict()
            memories.append(memories_item)

        scope = self.scope

        task = self.task

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "memories": memories,
                "scope": scope,
                "task": task,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.recalled_memory import RecalledMemory

        d = dict(src_dict)
        memories = []
        _memories = d.pop("memories")
        for memories_item_data in _memories:
            memories_item = RecalledMemory.from_dict(memories_item_data)

            memories.append(memories_item)

        scope = d.pop("scope")

        task = d.pop("task")

        memory_retrieved = cls(
            memories=memories,
            scope=scope,
            task=task,
        )

        memory_retrieved.additional_properties = d
        return memory_retrieved

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
