from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.key_end import KeyEnd

T = TypeVar("T", bound="StreamClosed")


@_attrs_define
class StreamClosed:
    """The `data:` of a `stream.closed` message: the last message of an event stream whose key was
    revoked, expired or lost its tenant (sent without an `id:`, so `Last-Event-ID` keeps naming the
    last event delivered). A reconnect with the same key is refused (401).

        Attributes:
            detail (str): What happened, in a sentence.
            reason (KeyEnd): Why a stored key no longer stands for its caller: what a stream opened with it says as it
                closes.
            type_ (str): `stream.closed`. Example: stream.closed.
    """

    detail: str
    reason: KeyEnd
    type_: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        detail = self.detail

        reason = self.reason.value

        type_ = self.type_

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "detail": detail,
                "reason": reason,
                "type": type_,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        detail = d.pop("detail")

        reason = KeyEnd(d.pop("reason"))

        type_ = d.pop("type")

        stream_closed = cls(
            detail=detail,
            reason=reason,
            type_=type_,
        )

        stream_closed.additional_properties = d
        return stream_closed

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
