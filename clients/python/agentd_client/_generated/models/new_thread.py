from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.new_thread_metadata import NewThreadMetadata


T = TypeVar("T", bound="NewThread")


@_attrs_define
class NewThread:
    """The body of `POST /v1/threads`.

    Attributes:
        metadata (NewThreadMetadata | Unset): Free-form data kept with the thread (at most 16 KiB as JSON); `GET
            /v1/threads?metadata=`
            finds threads by it.
    """

    metadata: NewThreadMetadata | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        metadata: dict[str, Any] | Unset = UNSET
        if not isinstance(self.metadata, Unset):
            metadata = self.metadata.to_dict()

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if metadata is not UNSET:
            field_dict["metadata"] = metadata

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.new_thread_metadata import NewThreadMetadata

        d = dict(src_dict)
        _metadata = d.pop("metadata", UNSET)
        metadata: NewThreadMetadata | Unset
        if isinstance(_metadata, Unset):
            metadata = UNSET
        else:
            metadata = NewThreadMetadata.from_dict(_metadata)

        new_thread = cls(
            metadata=metadata,
        )

        new_thread.additional_properties = d
        return new_thread

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
