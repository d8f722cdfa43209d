from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="Health")


@_attrs_define
class Health:
    """The state of the service, and what this replica is.

    Attributes:
        release (str): This replica's release (`0.2.0`, or `0.2.0-dev` between releases). Example: 0.2.0.
        schema (int): The schema this replica knows: the version of its newest migration. During a rolling
            upgrade, replicas of two releases serve one database and answer different values. Example: 20261206000028.
        status (str):
    """

    release: str
    schema: int
    status: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        release = self.release

        schema = self.schema

        status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "release": release,
                "schema": schema,
                "status": status,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        release = d.pop("release")

        schema = d.pop("schema")

        status = d.pop("status")

        health = cls(
            release=release,
            schema=schema,
            status=status,
        )

        health.additional_properties = d
        return health

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
