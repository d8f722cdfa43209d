from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.divergence_arguments import DivergenceArguments


T = TypeVar("T", bound="Divergence")


@_attrs_define
class Divergence:
    """A tool call of a replayed case that its recorded run did not make.

    Attributes:
        arguments (DivergenceArguments):
        executed (bool): Run for real anyway (the tool is in `safe_tools`).
        tool (str):
    """

    arguments: DivergenceArguments
    executed: bool
    tool: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        arguments = self.arguments.to_dict()

        executed = self.executed

        tool = self.tool

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "arguments": arguments,
                "executed": executed,
                "tool": tool,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.divergence_arguments import DivergenceArguments

        d = dict(src_dict)
        arguments = DivergenceArguments.from_dict(d.pop("arguments"))

        executed = d.pop("executed")

        tool = d.pop("tool")

        divergence = cls(
            arguments=arguments,
            executed=executed,
            tool=tool,
        )

        divergence.additional_properties = d
        return divergence

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
