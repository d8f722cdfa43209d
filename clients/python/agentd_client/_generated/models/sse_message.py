from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="SseMessage")


@_attrs_define
class SseMessage:
    """One server-sent event.

    Attributes:
        data (str | Unset): The event envelope (`Event`) as JSON
        event (str | Unset): The event type, e.g. `run.completed`; `llm.delta` for live reply text; `stream.closed`
            (data: `StreamClosed`) for the last message of a stream whose key ended
        id (str | Unset): The run's `seq` (a run's stream) or the global event id (the firehose)
        retry (int | Unset): Milliseconds to wait before reconnecting (sent at shutdown)
    """

    data: str | Unset = UNSET
    event: str | Unset = UNSET
    id: str | Unset = UNSET
    retry: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = self.data

        event = self.event

        id = self.id

        retry = self.retry

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if data is not UNSET:
            field_dict["data"] = data
        if event is not UNSET:
            field_dict["event"] = event
        if id is not UNSET:
            field_dict["id"] = id
        if retry is not UNSET:
            field_dict["retry"] = retry

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        data = d.pop("data", UNSET)

        event = d.pop("event", UNSET)

        id = d.pop("id", UNSET)

        retry = d.pop("retry", UNSET)

        sse_message = cls(
            data=data,
            event=event,
            id=id,
            retry=retry,
        )

        sse_message.additional_properties = d
        return sse_message

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
