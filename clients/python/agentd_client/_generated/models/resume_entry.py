from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.resume_status import ResumeStatus
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.resume_entry_metadata_type_0 import ResumeEntryMetadataType0
    from ..models.resume_entry_payload_type_0 import ResumeEntryPayloadType0


T = TypeVar("T", bound="ResumeEntry")


@_attrs_define
class ResumeEntry:
    """The answer to an interrupt.

    Attributes:
        interrupt_id (str):
        status (ResumeStatus):
        metadata (None | ResumeEntryMetadataType0 | Unset):
        payload (None | ResumeEntryPayloadType0 | Unset): A tool call: `{"approved": bool, "reason"?, "arguments"?}`; an
            answer under review:
            `{"approved": bool, "feedback"?}`.
    """

    interrupt_id: str
    status: ResumeStatus
    metadata: None | ResumeEntryMetadataType0 | Unset = UNSET
    payload: None | ResumeEntryPayloadType0 | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.resume_entry_metadata_type_0 import ResumeEntryMetadataType0
        from ..models.resume_entry_payload_type_0 import ResumeEntryPayloadType0

        interrupt_id = self.interrupt_id

        status = self.status.value

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, ResumeEntryMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        payload: dict[str, Any] | None | Unset
        if isinstance(self.payload, Unset):
            payload = UNSET
        elif isinstance(self.payload, ResumeEntryPayloadType0):
            payload = self.payload.to_dict()
        else:
            payload = self.payload

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "interruptId": interrupt_id,
                "status": status,
            }
        )
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if payload is not UNSET:
            field_dict["payload"] = payload

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.resume_entry_metadata_type_0 import ResumeEntryMetadataType0
        from ..models.resume_entry_payload_type_0 import ResumeEntryPayloadType0

        d = dict(src_dict)
        interrupt_id = d.pop("interruptId")

        status = ResumeStatus(d.pop("status"))

        def _parse_metadata(data: object) -> None | ResumeEntryMetadataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = ResumeEntryMetadataType0.from_dict(data)

                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ResumeEntryMetadataType0 | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))

        def _parse_payload(data: object) -> None | ResumeEntryPayloadType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                payload_type_0 = ResumeEntryPayloadType0.from_dict(data)

                return payload_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | ResumeEntryPayloadType0 | Unset, data)

        payload = _parse_payload(d.pop("payload", UNSET))

        resume_entry = cls(
            interrupt_id=interrupt_id,
            status=status,
            metadata=metadata,
            payload=payload,
        )

        resume_entry.additional_properties = d
        return resume_entry

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
