from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="AliasBody")


@_attrs_define
class AliasBody:
    """An alias of a crew: a name for one of its versions.

    Attributes:
        alias (str):
        created_at (datetime.datetime):
        updated_at (datetime.datetime):
        version (int): The version it names.
        previous_version (int | None | Unset): The version it named before this move (`PUT` answers only; absent when
            the alias is new).
        updated_by (None | str | Unset): The id of the key that last moved it, or `operator`.
    """

    alias: str
    created_at: datetime.datetime
    updated_at: datetime.datetime
    version: int
    previous_version: int | None | Unset = UNSET
    updated_by: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        alias = self.alias

        created_at = self.created_at.isoformat()

        updated_at = self.updated_at.isoformat()

        version = self.version

        previous_version: int | None | Unset
        if isinstance(self.previous_version, Unset):
            previous_version = UNSET
        else:
            previous_version = self.previous_version

        updated_by: None | str | Unset
        if isinstance(self.updated_by, Unset):
            updated_by = UNSET
        else:
            updated_by = self.updated_by

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "alias": alias,
                "created_at": created_at,
                "updated_at": updated_at,
                "version": version,
            }
        )
        if previous_version is not UNSET:
            field_dict["previous_version"] = previous_version
        if updated_by is not UNSET:
            field_dict["updated_by"] = updated_by

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        alias = d.pop("alias")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        version = d.pop("version")

        def _parse_previous_version(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        previous_version = _parse_previous_version(d.pop("previous_version", UNSET))

        def _parse_updated_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        updated_by = _parse_updated_by(d.pop("updated_by", UNSET))

        alias_body = cls(
            alias=alias,
            created_at=created_at,
            updated_at=updated_at,
            version=version,
            previous_version=previous_version,
            updated_by=updated_by,
        )

        alias_body.additional_properties = d
        return alias_body

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
