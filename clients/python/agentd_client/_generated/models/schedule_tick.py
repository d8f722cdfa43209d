from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.run_status import RunStatus
from ..models.tick_outcome import TickOutcome
from ..types import UNSET, Unset

T = TypeVar("T", bound="ScheduleTick")


@_attrs_define
class ScheduleTick:
    """One handled tick of a schedule.

    Attributes:
        handled_at (datetime.datetime): When it was handled.
        outcome (TickOutcome): How a tick ended.
        tick (datetime.datetime):
        error (None | str | Unset): Why its kickoff was refused.
        run_id (None | Unset | UUID): Its run (a kicked tick's, while the run exists).
        status (None | RunStatus | Unset):
    """

    handled_at: datetime.datetime
    outcome: TickOutcome
    tick: datetime.datetime
    error: None | str | Unset = UNSET
    run_id: None | Unset | UUID = UNSET
    status: None | RunStatus | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        handled_at = self.handled_at.isoformat()

        outcome = self.outcome.value

        tick = self.tick.isoformat()

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        run_id: None | str | Unset
        if isinstance(self.run_id, Unset):
            run_id = UNSET
        elif isinstance(self.run_id, UUID):
            run_id = str(self.run_id)
        else:
            run_id = self.run_id

        status: None | str | Unset
        if isinstance(self.status, Unset):
            status = UNSET
        elif isinstance(self.status, RunStatus):
            status = self.status.value
        else:
            status = self.status

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "handled_at": handled_at,
                "outcome": outcome,
                "tick": tick,
            }
        )
        if error is not UNSET:
            field_dict["error"] = error
        if run_id is not UNSET:
            field_dict["run_id"] = run_id
        if status is not UNSET:
            field_dict["status"] = status

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        handled_at = datetime.datetime.fromisoformat(d.pop("handled_at"))

        outcome = TickOutcome(d.pop("outcome"))

        tick = datetime.datetime.fromisoformat(d.pop("tick"))

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))

        def _parse_run_id(data: object) -> None | Unset | UUID:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                run_id_type_0 = UUID(data)

                return run_id_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Unset | UUID, data)

        run_id = _parse_run_id(d.pop("run_id", UNSET))

        def _parse_status(data: object) -> None | RunStatus | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_1 = RunStatus(data)

                return status_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RunStatus | Unset, data)

        status = _parse_status(d.pop("status", UNSET))

        schedule_tick = cls(
            handled_at=handled_at,
            outcome=outcome,
            tick=tick,
            error=error,
            run_id=run_id,
            status=status,
        )

        schedule_tick.additional_properties = d
        return schedule_tick

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
