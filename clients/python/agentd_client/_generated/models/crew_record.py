from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.crew_spec import CrewSpec


T = TypeVar("T", bound="CrewRecord")


@_attrs_define
class CrewRecord:
    """A registered crew.

    Attributes:
        created_at (datetime.datetime):
        name (str):
        spec (CrewSpec): A crew: agents, the tasks they perform and the tools they may use.
        updated_at (datetime.datetime):
    """

    created_at: datetime.datetime
    name: str
    spec: CrewSpec
    updated_at: datetime.datetime
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        created_at = self.created_at.isoformat()

        name = self.name

        spec = self.spec.to_dict()

        updated_at = self.updated_at.isoformat()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "created_at": created_at,
                "name": name,
                "spec": spec,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.crew_spec import CrewSpec

        d = dict(src_dict)
        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        name = d.pop("name")

        spec = CrewSpec.from_dict(d.pop("spec"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        crew_record = cls(
            created_at=created_at,
            name=name,
            spec=spec,
            updated_at=updated_at,
        )

        crew_record.additional_properties = d
        return crew_record

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
