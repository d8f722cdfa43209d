from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="UsageLine")


@_attrs_define
class UsageLine:
    """The model calls of one task, agent and model of a run, and what they used (in the journal: what
    a step adds to them).

        Attributes:
            agent (str):
            cached_tokens (int):
            completion_tokens (int):
            cost_usd (float):
            llm_calls (int):
            model (str): `provider/model`.
            prompt_tokens (int):
            task (str):
    """

    agent: str
    cached_tokens: int
    completion_tokens: int
    cost_usd: float
    llm_calls: int
    model: str
    prompt_tokens: int
    task: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        agent = self.agent

        cached_tokens = self.cached_tokens

        completion_tokens = self.completion_tokens

        cost_usd = self.cost_usd

        llm_calls = self.llm_calls

        model = self.model

        prompt_tokens = self.prompt_tokens

        task = self.task

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "agent": agent,
                "cached_tokens": cached_tokens,
                "completion_tokens": completion_tokens,
                "cost_usd": cost_usd,
                "llm_calls": llm_calls,
                "model": model,
                "prompt_tokens": prompt_tokens,
                "task": task,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        agent = d.pop("agent")

        cached_tokens = d.pop("cached_tokens")

        completion_tokens = d.pop("completion_tokens")

        cost_usd = d.pop("cost_usd")

        llm_calls = d.pop("llm_calls")

        model = d.pop("model")

        prompt_tokens = d.pop("prompt_tokens")

        task = d.pop("task")

        usage_line = cls(
            agent=agent,
            cached_tokens=cached_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost_usd,
            llm_calls=llm_calls,
            model=model,
            prompt_tokens=prompt_tokens,
            task=task,
        )

        usage_line.additional_properties = d
        return usage_line

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
