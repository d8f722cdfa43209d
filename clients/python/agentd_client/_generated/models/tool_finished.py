from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="ToolFinished")


@_attrs_define
class ToolFinished:
    """
    Attributes:
        cached (bool): Answered from the run's tool cache, without running the tool.
        duration_ms (int):
        observation (str): The result the agent sees (for an image, a note that it is attached).
        tool (str):
        tool_call_id (str):
        bytes_ (int | None | Unset): For an image result: its size.
        media_type (None | str | Unset): For an image result: its media type.
    """

    cached: bool
    duration_ms: int
    observation: str
    tool: str
    tool_call_id: str
    bytes_: int | None | Unset = UNSET
    media_type: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cached = self.cached

        duration_ms = self.duration_ms

        observation = self.observation

        tool = self.tool

        tool_call_id = self.tool_call_id

        bytes_: int | None | Unset
        if isinstance(self.bytes_, Unset):
            bytes_ = UNSET
        else:
            bytes_ = self.bytes_

        media_type: None | str | Unset
        if isinstance(self.media_type, Unset):
            media_type = UNSET
        else:
            media_type = self.media_type

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cached": cached,
                "duration_ms": duration_ms,
                "observation": observation,
                "tool": tool,
                "tool_call_id": tool_call_id,
            }
        )
        if bytes_ is not UNSET:
            field_dict["bytes"] = bytes_
        if media_type is not UNSET:
            field_dict["media_type"] = media_type

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cached = d.pop("cached")

        duration_ms = d.pop("duration_ms")

        observation = d.pop("observation")

        tool = d.pop("tool")

        tool_call_id = d.pop("tool_call_id")

        def _parse_bytes_(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        bytes_ = _parse_bytes_(d.pop("bytes", UNSET))

        def _parse_media_type(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        media_type = _parse_media_type(d.pop("media_type", UNSET))

        tool_finished = cls(
            cached=cached,
            duration_ms=duration_ms,
            observation=observation,
            tool=tool,
            tool_call_id=tool_call_id,
            bytes_=bytes_,
            media_type=media_type,
        )

        tool_finished.additional_properties = d
        return tool_finished

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
