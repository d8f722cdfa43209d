from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="PlanStep")


@_attrs_define
class PlanStep:
    """One step of a task's plan.

    Attributes:
        description (str):
        expected_tool (None | str | Unset): The tool the planner expects the step to use.
    """

    description: str
    expected_tool: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        description = self.description

        expected_tool: None | str | Unset
        if isinstance(self.expected_tool, Unset):
            expected_tool = UNSET
        else:
            expected_tool = self.expected_tool

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "description": description,
            }
        )
        if expected_tool is not UNSET:
            field_dict["expected_tool"] = expected_tool

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        description = d.pop("description")

        def _parse_expected_tool(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        expected_tool = _parse_expected_tool(d.pop("expected_tool", UNSET))

        plan_step = cls(
            description=description,
            expected_tool=expected_tool,
        )

        plan_step.additional_properties = d
        return plan_step

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
