from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.run_status import RunStatus
from ..types import UNSET, Unset

T = TypeVar("T", bound="RunSummary")


@_attrs_define
class RunSummary:
    """A run as a case's report shows it.

    Attributes:
        cost_usd (float):
        run_id (UUID):
        status (RunStatus): Where a run is in its life. Mirrors the `runs.status` CHECK constraint.
        tokens (int):
        tool_calls (int):
        duration_ms (int | None | Unset):
        error (None | str | Unset):
        output (None | str | Unset):
    """

    cost_usd: float
    run_id: UUID
    status: RunStatus
    tokens: int
    tool_calls: int
    duration_ms: int | None | Unset = UNSET
    error: None | str | Unset = UNSET
    output: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        cost_usd = self.cost_usd

        run_id = str(self.run_id)

        status = self.status.value

        tokens = self.tokens

        tool_calls = self.tool_calls

        duration_ms: int | None | Unset
        if isinstance(self.duration_ms, Unset):
            duration_ms = UNSET
        else:
            duration_ms = self.duration_ms

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        output: None | str | Unset
        if isinstance(self.output, Unset):
            output = UNSET
        else:
            output = self.output

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "cost_usd": cost_usd,
                "run_id": run_id,
                "status": status,
                "tokens": tokens,
                "tool_calls": tool_calls,
            }
        )
        if duration_ms is not UNSET:
            field_dict["duration_ms"] = duration_ms
        if error is not UNSET:
            field_dict["error"] = error
        if output is not UNSET:
            field_dict["output"] = output

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        cost_usd = d.pop("cost_usd")

        run_id = UUID(d.pop("run_id"))

        status = RunStatus(d.pop("status"))

        tokens = d.pop("tokens")

        tool_calls = d.pop("tool_calls")

        def _parse_duration_ms(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        duration_ms = _parse_duration_ms(d.pop("duration_ms", UNSET))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_output(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        output = _parse_output(d.pop("output", UNSET))

        run_summary = cls(
            cost_usd=cost_usd,
            run_id=run_id,
            status=status,
            tokens=tokens,
            tool_calls=tool_calls,
            duration_ms=duration_ms,
            error=error,
            output=output,
        )

        run_summary.additional_properties = d
        return run_summary

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
