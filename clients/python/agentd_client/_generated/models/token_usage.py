from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="TokenUsage")


@_attrs_define
class TokenUsage:
    """
    Attributes:
        cached_tokens (int): Input tokens read from the provider's prompt cache (part of `prompt_tokens`).
        completion_tokens (int):
        prompt_tokens (int): Input tokens, cached ones included.
        estimated (bool | Unset): The provider sent no usage for the call: the counts are agentd's estimate (absent when
            they are the provider's).
    """

    cached_tokens: int
    completion_tokens: int
    prompt_tokens: int
    estimated: bool | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cached_tokens = self.cached_tokens

        completion_tokens = self.completion_tokens

        prompt_tokens = self.prompt_tokens

        estimated = self.estimated

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cached_tokens": cached_tokens,
                "completion_tokens": completion_tokens,
                "prompt_tokens": prompt_tokens,
            }
        )
        if estimated is not UNSET:
            field_dict["estimated"] = estimated

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cached_tokens = d.pop("cached_tokens")

        completion_tokens = d.pop("completion_tokens")

        prompt_tokens = d.pop("prompt_tokens")

        estimated = d.pop("estimated", UNSET)

        token_usage = cls(
            cached_tokens=cached_tokens,
            completion_tokens=completion_tokens,
            prompt_tokens=prompt_tokens,
            estimated=estimated,
        )

        token_usage.additional_properties = d
        return token_usage

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
