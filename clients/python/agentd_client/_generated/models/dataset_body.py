from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.dataset_case import DatasetCase


T = TypeVar("T", bound="DatasetBody")


@_attrs_define
class DatasetBody:
    """A dataset, with its cases.

    Attributes:
        case_count (int):
        created_at (datetime.datetime):
        id (UUID):
        name (str):
        cases (list[DatasetCase]):
        created_by (None | str | Unset): The id of the key that made it, or `operator`.
        description (None | str | Unset):
    """

    case_count: int
    created_at: datetime.datetime
    id: UUID
    name: str
    cases: list[DatasetCase]
    created_by: None | str | Unset = UNSET
    description: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        case_count = self.case_count

        created_at = self.created_at.isoformat()

        id = str(self.id)

        name = self.name

        cases = []
        for cases_item_data in self.cases:
            cases_item = cases_item_data.to_dict()
            cases.append(cases_item)

        created_by: None | str | Unset
        if isinstance(self.created_by, Unset):
            created_by = UNSET
        else:
            created_by = self.created_by

        description: None | str | Unset
        if isinstance(self.description, Unset):
            description = UNSET
        else:
            description = self.description

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "case_count": case_count,
                "created_at": created_at,
                "id": id,
                "name": name,
                "cases": cases,
            }
        )
        if created_by is not UNSET:
            field_dict["created_by"] = created_by
        if description is not UNSET:
            field_dict["description"] = description

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.dataset_case import DatasetCase

        d = dict(src_dict)
        case_count = d.pop("case_count")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        id = UUID(d.pop("id"))

        name = d.pop("name")

        cases = []
        _cases = d.pop("cases")
        for cases_item_data in _cases:
            cases_item = DatasetCase.from_dict(cases_item_data)

            cases.append(cases_item)

        def _parse_created_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        created_by = _parse_created_by(d.pop("created_by", UNSET))

        def _parse_description(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        description = _parse_description(d.pop("description", UNSET))

        dataset_body = cls(
            case_count=case_count,
            created_at=created_at,
            id=id,
            name=name,
            cases=cases,
            created_by=created_by,
            description=description,
        )

        dataset_body.additional_properties = d
        return dataset_body

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
