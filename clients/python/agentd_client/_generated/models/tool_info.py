from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.tool_info_parameters import ToolInfoParameters


T = TypeVar("T", bound="ToolInfo")


@_attrs_define
class ToolInfo:
    """A tool as clients and models see it.

    Attributes:
        description (str):
        idempotent (bool): Safe to run again after a crash interrupted a call.
        name (str):
        parameters (ToolInfoParameters): JSON schema of the arguments.
    """

    description: str
    idempotent: bool
    name: str
    parameters: ToolInfoParameters
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        description = self.description

        idempotent = self.idempotent

        name = self.name

        parameters = self.parameters.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "description": description,
                "idempotent": idempotent,
                "name": name,
                "parameters": parameters,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.tool_info_parameters import ToolInfoParameters

        d = dict(src_dict)
        description = d.pop("description")

        idempotent = d.pop("idempotent")

        name = d.pop("name")

        parameters = ToolInfoParameters.from_dict(d.pop("parameters"))

        tool_info = cls(
            description=description,
            idempotent=idempotent,
            name=name,
            parameters=parameters,
        )

        tool_info.additional_properties = d
        return tool_info

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
