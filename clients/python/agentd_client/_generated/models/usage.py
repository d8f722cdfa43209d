from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="Usage")


@_attrs_define
class Usage:
    """Counters of what a run consumed.

    Attributes:
        completion_tokens (int):
        llm_calls (int): Model calls sent (a call lost to a crash, or one that failed, included).
        prompt_tokens (int): Input tokens, cached ones included.
        tool_calls (int):
        cached_tokens (int | Unset): Input tokens read from the providers' prompt caches (part of `prompt_tokens`).
        cost_usd (float | Unset): US dollars, at the prices configured for the run's models (unpriced models add 0).
        estimated_tokens (int | Unset): Of `prompt_tokens` and `completion_tokens`, those agentd estimated because the
            provider
            sent no usage for the call (0: every figure is the provider's).
    """

    completion_tokens: int
    llm_calls: int
    prompt_tokens: int
    tool_calls: int
    cached_tokens: int | Unset = UNSET
    cost_usd: float | Unset = UNSET
    estimated_tokens: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        completion_tokens = self.completion_tokens

        llm_calls = self.llm_calls

        prompt_tokens = self.prompt_tokens

        tool_calls = self.tool_calls

        cached_tokens = self.cached_tokens

        cost_usd = self.cost_usd

        estimated_tokens = self.estimated_tokens

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "completion_tokens": completion_tokens,
                "llm_calls": llm_calls,
                "prompt_tokens": prompt_tokens,
                "tool_calls": tool_calls,
            }
        )
        if cached_tokens is not UNSET:
            field_dict["cached_tokens"] = cached_tokens
        if cost_usd is not UNSET:
            field_dict["cost_usd"] = cost_usd
        if estimated_tokens is not UNSET:
            field_dict["estimated_tokens"] = estimated_tokens

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        completion_tokens = d.pop("completion_tokens")

        llm_calls = d.pop("llm_calls")

        prompt_tokens = d.pop("prompt_tokens")

        tool_calls = d.pop("tool_calls")

        cached_tokens = d.pop("cached_tokens", UNSET)

        cost_usd = d.pop("cost_usd", UNSET)

        estimated_tokens = d.pop("estimated_tokens", UNSET)

        usage = cls(
            completion_tokens=completion_tokens,
            llm_calls=llm_calls,
            prompt_tokens=prompt_tokens,
            tool_calls=tool_calls,
            cached_tokens=cached_tokens,
            cost_usd=cost_usd,
            estimated_tokens=estimated_tokens,
        )

        usage.additional_properties = d
        return usage

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
