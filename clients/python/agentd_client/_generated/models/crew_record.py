from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.crew_record_aliases import CrewRecordAliases
    from ..models.crew_spec import CrewSpec


T = TypeVar("T", bound="CrewRecord")


@_attrs_define
class CrewRecord:
    """A registered crew.

    Attributes:
        aliases (CrewRecordAliases): Its aliases and the versions they name. A kickoff naming the crew alone runs the
            `production` alias's version when there is one, else the newest.
        content_hash (str): sha256 of the newest version's canonical JSON, hex.
        created_at (datetime.datetime):
        name (str):
        spec (CrewSpec): A crew: agents, the tasks they perform and the tools they may use.
        updated_at (datetime.datetime): When its newest version was stored (a store of the same content changes
            nothing).
        version (int): Its newest version's number (versions count from 1).
    """

    aliases: CrewRecordAliases
    content_hash: str
    created_at: datetime.datetime
    name: str
    spec: CrewSpec
    updated_at: datetime.datetime
    version: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        aliases = self.aliases.to_dict()

        content_hash = self.content_hash

        created_at = self.created_at.isoformat()

        name = self.name

        spec = self.spec.to_dict()

        updated_at = self.updated_at.isoformat()

        version = self.version

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "aliases": aliases,
                "content_hash": content_hash,
                "created_at": created_at,
                "name": name,
                "spec": spec,
                "updated_at": updated_at,
                "version": version,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.crew_record_aliases import CrewRecordAliases
        from ..models.crew_spec import CrewSpec

        d = dict(src_dict)
        aliases = CrewRecordAliases.from_dict(d.pop("aliases"))

        content_hash = d.pop("content_hash")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        name = d.pop("name")

        spec = CrewSpec.from_dict(d.pop("spec"))

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        version = d.pop("version")

        crew_record = cls(
            aliases=aliases,
            content_hash=content_hash,
            created_at=created_at,
            name=name,
            spec=spec,
            updated_at=updated_at,
            version=version,
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
