from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="StepCompleted")


@_attrs_define
class StepCompleted:
    """
    Attributes:
        output (str):
        step (int):
        task (str):
        timed_out (bool | None | Unset): The step ran out of time; `output` says what it had.
    """

    output: str
    step: int
    task: str
    timed_out: bool | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        output = self.output

        step = self.step

        task = self.task

        timed_out: bool | None | Unset
        if isinstance(self.timed_out, Unset):
            timed_out = UNSET
        else:
            timed_out = self.timed_out

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "output": output,
                "step": step,
                "task": task,
            }
        )
        if timed_out is not UNSET:
            field_dict["timed_out"] = timed_out

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        output = d.pop("output")

        step = d.pop("step")

        task = d.pop("task")

        def _parse_timed_out(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        timed_out = _parse_timed_out(d.pop("timed_out", UNSET))

        step_completed = cls(
            output=output,
            step=step,
            task=task,
            timed_out=timed_out,
        )

        step_completed.additional_properties = d
        return step_completed

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
