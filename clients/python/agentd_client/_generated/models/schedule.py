from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast
from uuid import UUID

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.catch_up import CatchUp
from ..models.overlap import Overlap
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.schedule_kickoff import ScheduleKickoff


T = TypeVar("T", bound="Schedule")


@_attrs_define
class Schedule:
    """A schedule as the API shows it.

    Attributes:
        catch_up (CatchUp): What happens to ticks that were missed (the service was down or behind by more than the
            misfire grace).
        created_at (datetime.datetime):
        cron (str): 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first.
        enabled (bool):
        id (UUID):
        kickoff (ScheduleKickoff): The kickoff each tick makes: as `POST /v1/kickoffs` takes it (a crew or a registered
            crew's name, inputs, thread_id...).
        overlap (Overlap): What a tick does while a run of the schedule has not ended.
        timezone (str): An IANA time zone.
        updated_at (datetime.datetime):
        last_tick_at (datetime.datetime | None | Unset): The last tick handled (fired, skipped or missed).
        name (None | str | Unset):
        next_run_at (datetime.datetime | None | Unset): The next tick (absent while disabled).
    """

    catch_up: CatchUp
    created_at: datetime.datetime
    cron: str
    enabled: bool
    id: UUID
    kickoff: ScheduleKickoff
    overlap: Overlap
    timezone: str
    updated_at: datetime.datetime
    last_tick_at: datetime.datetime | None | Unset = UNSET
    name: None | str | Unset = UNSET
    next_run_at: datetime.datetime | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        catch_up = self.catch_up.value

        created_at = self.created_at.isoformat()

        cron = self.cron

        enabled = self.enabled

        id = str(self.id)

        kickoff = self.kickoff.to_dict()

        overlap = self.overlap.value

        timezone = self.timezone

        updated_at = self.updated_at.isoformat()

        last_tick_at: None | str | Unset
        if isinstance(self.last_tick_at, Unset):
            last_tick_at = UNSET
        elif isinstance(self.last_tick_at, datetime.datetime):
            last_tick_at = self.last_tick_at.isoformat()
        else:
            last_tick_at = self.last_tick_at

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        next_run_at: None | str | Unset
        if isinstance(self.next_run_at, Unset):
            next_run_at = UNSET
        elif isinstance(self.next_run_at, datetime.datetime):
            next_run_at = self.next_run_at.isoformat()
        else:
            next_run_at = self.next_run_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "catch_up": catch_up,
                "created_at": created_at,
                "cron": cron,
                "enabled": enabled,
                "id": id,
                "kickoff": kickoff,
                "overlap": overlap,
                "timezone": timezone,
                "updated_at": updated_at,
            }
        )
        if last_tick_at is not UNSET:
            field_dict["last_tick_at"] = last_tick_at
        if name is not UNSET:
            field_dict["name"] = name
        if next_run_at is not UNSET:
            field_dict["next_run_at"] = next_run_at

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.schedule_kickoff import ScheduleKickoff

        d = dict(src_dict)
        catch_up = CatchUp(d.pop("catch_up"))

        created_at = datetime.datetime.fromisoformat(d.pop("created_at"))

        cron = d.pop("cron")

        enabled = d.pop("enabled")

        id = UUID(d.pop("id"))

        kickoff = ScheduleKickoff.from_dict(d.pop("kickoff"))

        overlap = Overlap(d.pop("overlap"))

        timezone = d.pop("timezone")

        updated_at = datetime.datetime.fromisoformat(d.pop("updated_at"))

        def _parse_last_tick_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                last_tick_at_type_0 = datetime.datetime.fromisoformat(data)

                return last_tick_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        last_tick_at = _parse_last_tick_at(d.pop("last_tick_at", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_next_run_at(data: object) -> datetime.datetime | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                next_run_at_type_0 = datetime.datetime.fromisoformat(data)

                return next_run_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None | Unset, data)

        next_run_at = _parse_next_run_at(d.pop("next_run_at", UNSET))

        schedule = cls(
            catch_up=catch_up,
            created_at=created_at,
            cron=cron,
            enabled=enabled,
            id=id,
            kickoff=kickoff,
            overlap=overlap,
            timezone=timezone,
            updated_at=updated_at,
            last_tick_at=last_tick_at,
            name=name,
            next_run_at=next_run_at,
        )

        schedule.additional_properties = d
        return schedule

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
