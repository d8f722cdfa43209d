from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="AuditEntry")


@_attrs_define
class AuditEntry:
    """A change made (or attempted) through the API.

    Attributes:
        action (str): What was done: the resource kind and the operation (`secret.put`, `run.cancel`...).
        at (datetime.datetime):
        id (UUID):
        outcome (str): `succeeded`, `denied`, `not_found`, `conflict`, `invalid`, `refused` or `failed`.
        resource (str): The path of what it was done to.
        tenant (str): The tenant whose resource it is (the caller's, for a refused request).
        key_id (None | Unset | UUID): The key that made it; `null` for the keys of `AGENTD_API_KEYS`, an open API and
            the
            command line.
    """

    action: str
    at: datetime.datetime
    id: UUID
    outcome: str
    resource: str
    tenant: str
    key_id: None | Unset | UUID = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        action = self.action

        at = self.at.isoformat()

        id = str(self.id)

        outcome = self.outcome

        resource = self.resource

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
                "action": action,
                "at": at,
                "id": id,
                "outcome": outcome,
                "resource": resource,
                "tenant": tenant,
            }
        )
        if key_id is not UNSET:
            field_dict["key_id"] = key_id

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        action = d.pop("action")

        at = datetime.datetime.fromisoformat(d.pop("at"))

        id = UUID(d.pop("id"))

        outcome = d.pop("outcome")

        resource = d.pop("resource")

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

        audit_entry = cls(
            action=action,
            at=at,
            id=id,
            outcome=outcome,
            resource=resource,
            tenant=tenant,
            key_id=key_id,
        )

        audit_entry.additional_properties = d
        return audit_entry

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
