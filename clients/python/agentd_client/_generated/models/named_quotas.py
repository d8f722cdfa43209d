from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

T = TypeVar("T", bound="NamedQuotas")


@_attrs_define
class NamedQuotas:
    """The body of `POST /v1/tenants` (a new tenant, with quotas if any; omitted: no limit) and of
    `PATCH /v1/tenants` (the tenant to change, with the quotas to change).

        Attributes:
            name (str): 1 to 63 lowercase letters, digits, `-` and `_`, starting with a letter or digit. Example: team-a.
            max_cost_usd_per_day (float | None | Unset): US dollars per UTC day (from the providers' prices), enforced as
                `max_tokens_per_day`.
            max_queued (int | None | Unset): Runs queued at once; a kickoff beyond it is refused (429 `/problems/quota`).
            max_running (int | None | Unset): Runs executing at once across the cluster; more stay queued until one ends.
            max_tokens_per_day (int | None | Unset): Prompt and completion tokens per UTC day: a kickoff once it is spent is
                refused (429), a
                run that crosses it fails with `error.kind = "budget"`.
    """

    name: str
    max_cost_usd_per_day: float | None | Unset = UNSET
    max_queued: int | None | Unset = UNSET
    max_running: int | None | Unset = UNSET
    max_tokens_per_day: int | None | Unset = UNSET
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        name = self.name

        max_cost_usd_per_day: float | None | Unset
        if isinstance(self.max_cost_usd_per_day, Unset):
            max_cost_usd_per_day = UNSET
        else:
            max_cost_usd_per_day = self.max_cost_usd_per_day

        max_queued: int | None | Unset
        if isinstance(self.max_queued, Unset):
            max_queued = UNSET
        else:
            max_queued = self.max_queued

        max_running: int | None | Unset
        if isinstance(self.max_running, Unset):
            max_running = UNSET
        else:
            max_running = self.max_running

        max_tokens_per_day: int | None | Unset
        if isinstance(self.max_tokens_per_day, Unset):
            max_tokens_per_day = UNSET
        else:
            max_tokens_per_day = self.max_tokens_per_day

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "name": name,
            }
        )
        if max_cost_usd_per_day is not UNSET:
            field_dict["max_cost_usd_per_day"] = max_cost_usd_per_day
        if max_queued is not UNSET:
            field_dict["max_queued"] = max_queued
        if max_running is not UNSET:
            field_dict["max_running"] = max_running
        if max_tokens_per_day is not UNSET:
            field_dict["max_tokens_per_day"] = max_tokens_per_day

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        name = d.pop("name")

        def _parse_max_cost_usd_per_day(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_cost_usd_per_day = _parse_max_cost_usd_per_day(
            d.pop("max_cost_usd_per_day", UNSET)
        )

        def _parse_max_queued(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_queued = _parse_max_queued(d.pop("max_queued", UNSET))

        def _parse_max_running(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_running = _parse_max_running(d.pop("max_running", UNSET))

        def _parse_max_tokens_per_day(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        max_tokens_per_day = _parse_max_tokens_per_day(
            d.pop("max_tokens_per_day", UNSET)
        )

        named_quotas = cls(
            name=name,
            max_cost_usd_per_day=max_cost_usd_per_day,
            max_queued=max_queued,
            max_running=max_running,
            max_tokens_per_day=max_tokens_per_day,
        )

        named_quotas.additional_properties = d
        return named_quotas

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
