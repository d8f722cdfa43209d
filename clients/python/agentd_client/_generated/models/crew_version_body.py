from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.crew_spec import CrewSpec


T = TypeVar("T", bound="CrewVersionBody")


@_attrs_define
class CrewVersionBody:
    """One version of a crew, with its spec.

    Attributes:
        aliases (list[str]): The aliases that name it.
        content_hash (str): sha256 of the spec's canonical JSON, hex: two versions with one hash have one content.
        created_at (datetime.datetime):
        name (str):
        version (int):
        spec (CrewSpec): A crew: agents, the tasks they perform and the tools they may use.
        stored_by (None | str | Unset): The id of the key that stored it, or `operator` (a key of `AGENTD_API_KEYS`, or
            an open
            API); absent for a version stored by a release before versions.
    """

    aliases: list[str]
    content_hash: str
    created_at: datetime.datetime
    name: str
    version: int
    spec: CrewSpec
    stored_by: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        aliases = self.aliases

        content_hash = self.content_hash

        created_at = self.created_at.isoformat()

        name = self.name

        version = self.version

        spec = self.spec.to_dict()

        stored_by: None | str | Unset
        if isinstance(self.stored_by, Unset):
            stored_by = UNSET
        else:
            stored_by = self.stored_by

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "aliases": aliases,
                "content_hash": content_hash,
                "created_at": created_at,
                "name": name,
                "version": version,
                "spec": spec,
            }
        )
        if stored_by is not UNSET:
            field_dict["stored_by"] = stored_by

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.crew_spec import CrewSpec

        d = dict(src_dict)
        aliases = cast(list[str], d.pop("aliases"))

        content_hash = d.pop("content_hash")

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        name = d.pop("name")

        version = d.pop("version")

        spec = CrewSpec.from_dict(d.pop("spec"))

        def _parse_stored_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        stored_by = _parse_stored_by(d.pop("stored_by", UNSET))

        crew_version_body = cls(
            aliases=aliases,
            content_hash=content_hash,
            created_at=created_at,
            name=name,
            version=version,
            spec=spec,
            stored_by=stored_by,
        )

        crew_version_body.additional_properties = d
        return crew_version_body

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
