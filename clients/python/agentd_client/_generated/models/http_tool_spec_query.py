from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.secret_ref import SecretRef


T = TypeVar("T", bound="HttpToolSpecQuery")


@_attrs_define
class HttpToolSpecQuery:
    """Query parameters added to every call's URL (beside a GET call's arguments)."""

    additional_properties: dict[str, SecretRef | str] = _attrs_field(
        init=False, factory=dict
    )

    def to_dict(self) -> dict[str, Any]:
        from ..models.secret_ref import SecretRef

        field_dict: dict[str, Any] = {}
        for prop_name, prop in self.additional_properties.items():
            if isinstance(prop, SecretRef):
                field_dict[prop_name] = prop.to_dict()
            else:
                field_dict[prop_name] = prop

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.secret_ref import SecretRef

        d = dict(src_dict)
        http_tool_spec_query = cls()

        additional_properties = {}
        for prop_name, prop_dict in d.items():

            def _parse_additional_property(data: object) -> SecretRef | str:
                try:
                    if not isinstance(data, dict):
                        raise TypeError()
                    componentsschemas_value_source_type_1 = SecretRef.from_dict(data)

                    return componentsschemas_value_source_type_1
                except (TypeError, ValueError, AttributeError, KeyError):
                    pass
                return cast(SecretRef | str, data)

            additional_property = _parse_additional_property(prop_dict)

            additional_properties[prop_name] = additional_property

        http_tool_spec_query.additional_properties = additional_properties
        return http_tool_spec_query

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> SecretRef | str:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: SecretRef | str) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
