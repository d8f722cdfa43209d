from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.call_purpose import CallPurpose
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.token_usage import TokenUsage


T = TypeVar("T", bound="LlmFinished")


@_attrs_define
class LlmFinished:
    """
    Attributes:
        duration_ms (int):
        model (str):
        usage (TokenUsage):
        cost_usd (float | None | Unset): What the call cost in US dollars, when its model has prices configured.
        iteration (int | None | Unset):
        purpose (CallPurpose | None | Unset):
        retries (int | Unset): Attempts of the call that failed and were retried before this reply (transient failures,
            rate limits); absent when the first attempt answered.
    """

    duration_ms: int
    model: str
    usage: TokenUsage
    cost_usd: float | None | Unset = UNSET
    iteration: int | None | Unset = UNSET
    purpose: CallPurpose | None | Unset = UNSET
    retries: int | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        duration_ms = self.duration_ms

        model = self.model

        usage = self.usage.to_dict()

        cost_usd: float | None | Unset
        if isinstance(self.cost_usd, Unset):
            cost_usd = UNSET
        else:
            cost_usd = self.cost_usd

        iteration: int | None | Unset
        if isinstance(self.iteration, Unset):
            iteration = UNSET
        else:
            iteration = self.iteration

        purpose: None | str | Unset
        if isinstance(self.purpose, Unset):
            purpose = UNSET
        elif isinstance(self.purpose, CallPurpose):
            purpose = self.purpose.value
        else:
            purpose = self.purpose

        retries = self.retries

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "duration_ms": duration_ms,
                "model": model,
                "usage": usage,
            }
        )
        if cost_usd is not UNSET:
            field_dict["cost_usd"] = cost_usd
        if iteration is not UNSET:
            field_dict["iteration"] = iteration
        if purpose is not UNSET:
            field_dict["purpose"] = purpose
        if retries is not UNSET:
            field_dict["retries"] = retries

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.token_usage import TokenUsage

        d = dict(src_dict)
        duration_ms = d.pop("duration_ms")

        model = d.pop("model")

        usage = TokenUsage.from_dict(d.pop("usage"))

        def _parse_cost_usd(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        cost_usd = _parse_cost_usd(d.pop("cost_usd", UNSET))

        def _parse_iteration(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        iteration = _parse_iteration(d.pop("iteration", UNSET))

        def _parse_purpose(data: object) -> CallPurpose | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                purpose_type_1 = CallPurpose(data)

                return purpose_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CallPurpose | None | Unset, data)

        purpose = _parse_purpose(d.pop("purpose", UNSET))

        retries = d.pop("retries", UNSET)

        llm_finished = cls(
            duration_ms=duration_ms,
            model=model,
            usage=usage,
            cost_usd=cost_usd,
            iteration=iteration,
            purpose=purpose,
            retries=retries,
        )

        llm_finished.additional_properties = d
        return llm_finished

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
