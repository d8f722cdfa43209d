from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.scope import Scope
from ..types import UNSET, Unset

T = TypeVar("T", bound="WhoAmI")


@_attrs_define
class WhoAmI:
    """Who the caller is: its tenant, its key's scopes and id.

    Attributes:
        scopes (list[Scope]): What the key may do (`admin` covers everything, over every tenant).
        tenant (str): The tenant the key acts for.
        key_id (None | Unset | UUID): The key's id; `null` for a key of `AGENTD_API_KEYS` or an open API.
    """

    scopes: list[Scope]
    tenant: str
    key_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        scopes = []
        for scopes_item_data in self.scopes:
            scopes_item = scopes_item_data.value
            scopes.append(scopes_item)

        tenant = self.tenant

        key_id: None | str | Unset
        if isinstance(self.key_id, Unset):
            key_id = UNSET
        elif isinstance(self.key_id, UUID):
            key_id = str(self.key_id)
        else:
            key_id = self.key_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "scopes": scopes,
                "tenant": tenant,
            }
        )
        if key_id is not UNSET:
            field_dict["key_id"] = key_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        scopes = []
        _scopes = d.pop("scopes")
        for scopes_item_data in _scopes:
            scopes_item = Scope(scopes_item_data)

            scopes.append(scopes_item)

        tenant = d.pop("tenant")

        def _parse_key_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                key_id_type_0 = UUID(data)

                return key_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        key_id = _parse_key_id(d.pop("key_id", UNSET))

        who_am_i = cls(
            scopes=scopes,
            tenant=tenant,
            key_id=key_id,
        )

        who_am_i.additional_properties = d
        return who_am_i

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
