from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.crew_record import CrewRecord
    from ..models.import_warning import ImportWarning_


T = TypeVar("T", bound="ImportedCrew")


@_attrs_define
class ImportedCrew:
    """An imported crew, as stored, and what it does not do as the project would under CrewAI.

    Attributes:
        crew (CrewRecord): A registered crew.
        warnings (list[ImportWarning_]): Every field of the project the crew does not honour, with what agentd does
            instead.
    """

    crew: CrewRecord
    warnings: list[ImportWarning_]
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        crew = self.crew.to_dict()

        warnings = []
        for warnings_item_data in self.warnings:
            warnings_item = warnings_item_data.to_dict()
            warnings.append(warnings_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "crew": crew,
                "warnings": warnings,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.crew_record import CrewRecord
        from ..models.import_warning import ImportWarning_

        d = dict(src_dict)
        crew = CrewRecord.from_dict(d.pop("crew"))

        warnings = []
        _warnings = d.pop("warnings")
        for warnings_item_data in _warnings:
            warnings_item = ImportWarning_.from_dict(warnings_item_data)

            warnings.append(warnings_item)

        imported_crew = cls(
            crew=crew,
            warnings=warnings,
        )

        imported_crew.additional_properties = d
        return imported_crew

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
