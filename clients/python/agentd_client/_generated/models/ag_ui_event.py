from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="AgUiEvent")


@_attrs_define
class AgUiEvent:
    """One AG-UI event of the stream (`data:` of each message).

    Attributes:
        type_ (str): `RUN_STARTED`, `STEP_STARTED`, `TEXT_MESSAGE_START`, `TOOL_CALL_START`, `STATE_SNAPSHOT`,
            `RUN_FINISHED`, `RUN_ERROR`, …
    """

    type_: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        type_ = self.type_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        type_ = d.pop("type")

        ag_ui_event = cls(
            type_=type_,
        )

        ag_ui_event.additional_properties = d
        return ag_ui_event

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
