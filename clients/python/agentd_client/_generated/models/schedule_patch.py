from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.catch_up import CatchUp
from ..models.overlap import Overlap
from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.schedule_patch_kickoff import SchedulePatchKickoff


T = TypeVar("T", bound="SchedulePatch")


@_attrs_define
class SchedulePatch:
    """The body of `PATCH /v1/schedules/{id}`: the fields to change.

    Attributes:
        kickoff (SchedulePatchKickoff):
        catch_up (CatchUp | None | Unset):
        cron (None | str | Unset):
        enabled (bool | None | Unset): Enable (from the next tick after now) or disable.
        name (None | str | Unset):
        overlap (None | Overlap | Unset):
        timezone (None | str | Unset):
    """

    kickoff: SchedulePatchKickoff
    catch_up: CatchUp | None | Unset = UNSET
    cron: None | str | Unset = UNSET
    enabled: bool | None | Unset = UNSET
    name: None | str | Unset = UNSET
    overlap: None | Overlap | Unset = UNSET
    timezone: None | str | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        kickoff = self.kickoff.to_dict()

        catch_up: None | str | Unset
        if isinstance(self.catch_up, Unset):
            catch_up = UNSET
        elif isinstance(self.catch_up, CatchUp):
            catch_up = self.catch_up.value
        else:
            catch_up = self.catch_up

        cron: None | str | Unset
        if isinstance(self.cron, Unset):
            cron = UNSET
        else:
            cron = self.cron

        enabled: bool | None | Unset
        if isinstance(self.enabled, Unset):
            enabled = UNSET
        else:
            enabled = self.enabled

        name: None | str | Unset
        if isinstance(self.name, Unset):
            name = UNSET
        else:
            name = self.name

        overlap: None | str | Unset
        if isinstance(self.overlap, Unset):
            overlap = UNSET
        elif isinstance(self.overlap, Overlap):
            overlap = self.overlap.value
        else:
            overlap = self.overlap

        timezone: None | str | Unset
        if isinstance(self.timezone, Unset):
            timezone = UNSET
        else:
            timezone = self.timezone

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "kickoff": kickoff,
            }
        )
        if catch_up is not UNSET:
            field_dict["catch_up"] = catch_up
        if cron is not UNSET:
            field_dict["cron"] = cron
        if enabled is not UNSET:
            field_dict["enabled"] = enabled
        if name is not UNSET:
            field_dict["name"] = name
        if overlap is not UNSET:
            field_dict["overlap"] = overlap
        if timezone is not UNSET:
            field_dict["timezone"] = timezone

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.schedule_patch_kickoff import SchedulePatchKickoff

        d = dict(src_dict)
        kickoff = SchedulePatchKickoff.from_dict(d.pop("kickoff"))

        def _parse_catch_up(data: object) -> CatchUp | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                catch_up_type_1 = CatchUp(data)

                return catch_up_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(CatchUp | None | Unset, data)

        catch_up = _parse_catch_up(d.pop("catch_up", UNSET))

        def _parse_cron(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        cron = _parse_cron(d.pop("cron", UNSET))

        def _parse_enabled(data: object) -> bool | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(bool | None | Unset, data)

        enabled = _parse_enabled(d.pop("enabled", UNSET))

        def _parse_name(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        name = _parse_name(d.pop("name", UNSET))

        def _parse_overlap(data: object) -> None | Overlap | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                overlap_type_1 = Overlap(data)

                return overlap_type_1
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Overlap | Unset, data)

        overlap = _parse_overlap(d.pop("overlap", UNSET))

        def _parse_timezone(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        timezone = _parse_timezone(d.pop("timezone", UNSET))

        schedule_patch = cls(
            kickoff=kickoff,
            catch_up=catch_up,
            cron=cron,
            enabled=enabled,
            name=name,
            overlap=overlap,
            timezone=timezone,
        )

        schedule_patch.additional_properties = d
        return schedule_patch

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
