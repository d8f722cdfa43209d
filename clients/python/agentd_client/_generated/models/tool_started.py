from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.tool_started_arguments import ToolStartedArguments


T = TypeVar("T", bound="ToolStarted")


@_attrs_define
class ToolStarted:
    """
    Attributes:
        arguments (ToolStartedArguments):
        tool (str):
        tool_call_id (str): The call's id, unique in the run (the key of `GET /v1/runs/{id}/tool-calls`).
    """

    arguments: ToolStartedArguments
    tool: str
    tool_call_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        arguments = self.arguments.to_dict()

        tool = self.tool

        tool_call_id = self.tool_call_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "arguments": arguments,
                "tool": tool,
                "tool_call_id": tool_call_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.tool_started_arguments import ToolStartedArguments

        d = dict(src_dict)
        arguments = ToolStartedArguments.from_dict(d.pop("arguments"))

        tool = d.pop("tool")

        tool_call_id = d.pop("tool_call_id")

        tool_started = cls(
            arguments=arguments,
            tool=tool,
            tool_call_id=tool_call_id,
        )

        tool_started.additional_properties = d
        return tool_started

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
