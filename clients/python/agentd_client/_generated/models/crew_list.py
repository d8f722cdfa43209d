from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.crew_record import CrewRecord


T = TypeVar("T", bound="CrewList")


@_attrs_define
class CrewList:
    """Every registered crew.

    Attributes:
        crews (list[CrewRecord]):
    """

    crews: list[CrewRecord]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        crews = []
        for crews_item_data in self.crews:
            crews_item = crews_item_data.to_dict()
            crews.append(crews_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "crews": crews,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.crew_record import CrewRecord

        d = dict(src_dict)
        crews = []
        _crews = d.pop("crews")
        for crews_item_data in _crews:
            crews_item = CrewRecord.from_dict(crews_item_data)

            crews.append(crews_item)

        crew_list = cls(
            crews=crews,
        )

        crew_list.additional_properties = d
        return crew_list

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
