from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.call_purpose import CallPurpose
from ..types import UNSET, Unset

T = TypeVar("T", bound="LlmStarted")


@_attrs_define
class LlmStarted:
    """
    Attributes:
        model (str): `provider/model`.
        iteration (int | None | Unset): The agent's turn, from 1 (absent for a side call).
        purpose (CallPurpose | None | Unset):
    """

    model: str
    iteration: int | None | Unset = UNSET
    purpose: CallPurpose | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        model = self.model

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

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "model": model,
            }
        )
        if iteration is not UNSET:
            field_dict["iteration"] = iteration
        if purpose is not UNSET:
            field_dict["purpose"] = purpose

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        model = d.pop("model")

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

        llm_started = cls(
            model=model,
            iteration=iteration,
            purpose=purpose,
        )

        llm_started.additional_properties = d
        return llm_started

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
