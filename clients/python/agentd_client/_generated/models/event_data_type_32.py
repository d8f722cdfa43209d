from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.event_data_type_32_type import EventDataType32Type

if TYPE_CHECKING:
    from ..models.step_started import StepStarted


T = TypeVar("T", bound="EventDataType32")


@_attrs_define
class EventDataType32:
    """
    Attributes:
        data (StepStarted):
        type_ (EventDataType32Type):
    """

    data: StepStarted
    type_: EventDataType32Type
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data.to_dict()

        type_ = self.type_.value

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "data": data,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.step_started import StepStarted

        d = dict(src_dict)
        data = StepStarted.from_dict(d.pop("data"))

        type_ = EventDataType32Type(d.pop("type"))

        event_data_type_32 = cls(
            data=data,
            type_=type_,
        )

        event_data_type_32.additional_properties = d
        return event_data_type_32

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
